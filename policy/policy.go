package policy

import (
	"math"
	"strconv"
	"time"
)

// Defaults applied by [Default], [Resolve] and [Parse] to omitted options.
const (
	DefaultInitialDelay = 500 * time.Millisecond
	DefaultMaxDelay     = 30 * time.Second
	DefaultMaxAttempts  = 10
	DefaultJitter       = 0.0
	// DefaultProbeInterval is 0: an exhausted supervisor stays exhausted.
	DefaultProbeInterval = time.Duration(0)
)

// Upper bounds. They exist so that every accepted value fits the types that
// carry it, and so that configurations stay portable to hosts written in
// JavaScript.
const (
	// DelayLimitMs is the largest accepted delay in milliseconds: 2^31-1,
	// the JavaScript timer maximum (setTimeout fires immediately above it).
	// Go timers have no such limit; keeping it means one config file means
	// the same to a Go host and a JavaScript one.
	DelayLimitMs = math.MaxInt32

	// DelayLimit is DelayLimitMs as a duration, about 24.8 days.
	DelayLimit = DelayLimitMs * time.Millisecond

	// AttemptsLimit is the largest accepted MaxAttempts (2^31-1). At one
	// attempt per MaxDelay it is practically "retry for ever", and it keeps
	// the attempt count an exact integer in JSON and in int on any platform.
	AttemptsLimit = math.MaxInt32
)

// Rules shared by Resolve and Validate, so the two can never disagree about
// the wording of the same bound.
var (
	ruleDelayMs       = "must be a positive number of milliseconds no greater than " + strconv.Itoa(DelayLimitMs)
	ruleWholeMs       = "must be a whole number of milliseconds"
	ruleDuration      = "must be a positive duration no greater than " + DelayLimit.String()
	ruleAttempts      = "must be a positive integer"
	ruleAttemptsLimit = "must be a positive integer no greater than " + strconv.Itoa(AttemptsLimit)
	ruleJitter        = "must be a number between 0 and 1"
	ruleProbeMs       = "must be 0 (no probing) or a positive number of milliseconds no greater than " + strconv.Itoa(DelayLimitMs)
	ruleProbe         = "must be 0 (no probing) or a positive duration no greater than " + DelayLimit.String()
)

// Policy is a resolved reconnect policy: every field is set and, when it
// comes from [Resolve] or [Parse], within bounds. Policies built in code
// should be checked with [Policy.Validate].
type Policy struct {
	// Enabled turns reconnection on. A disabled policy still carries
	// valid bounds; a [Budget] built from it never grants a retry.
	Enabled bool
	// InitialDelay is the delay before the first retry of an outage.
	InitialDelay time.Duration
	// MaxDelay caps the exponential schedule and is also the
	// stability window (see [Policy.StabilityWindow]).
	MaxDelay time.Duration
	// MaxAttempts is the number of retries one outage may use.
	MaxAttempts int
	// Jitter is the fraction, in [0, 1], by which a [Budget] spreads each
	// delay symmetrically around the schedule; 0 disables jitter.
	Jitter float64
	// ProbeInterval, if positive, is how often a supervisor whose budget
	// is spent (state exhausted) tries one more attempt: a success
	// recovers with a fresh budget, a failure waits for the next probe
	// without a new backoff series. Zero (the default) stays exhausted
	// until a human reconnects.
	ProbeInterval time.Duration
}

// Default returns the default policy: enabled, 500 ms initial delay, 30 s
// maximum delay, 10 attempts, no jitter, no probing once exhausted.
func Default() Policy {
	return Policy{
		Enabled:      true,
		InitialDelay: DefaultInitialDelay,
		MaxDelay:     DefaultMaxDelay,
		MaxAttempts:  DefaultMaxAttempts,
		Jitter:       DefaultJitter,
	}
}

// Validate re-judges every bound that [Resolve] enforces, for policies built
// in code. It returns nil or an error matching [ErrInvalid] whose
// [*FieldError] values name the Go field (InitialDelay, MaxDelay,
// MaxAttempts, Jitter, ProbeInterval). The zero Policy is invalid. Enabled is not
// consulted: a disabled policy must still be a valid one, so that enabling
// it later cannot surface a latent error.
func (p Policy) Validate() error {
	var errs []error
	reject := func(field, rule string) {
		errs = append(errs, &FieldError{Field: field, Rule: rule})
	}
	initialOK := p.InitialDelay > 0 && p.InitialDelay <= DelayLimit
	maxOK := p.MaxDelay > 0 && p.MaxDelay <= DelayLimit
	if !initialOK {
		reject("InitialDelay", ruleDuration)
	}
	if !maxOK {
		reject("MaxDelay", ruleDuration)
	}
	if initialOK && maxOK && p.InitialDelay > p.MaxDelay {
		reject("InitialDelay", "must be less than or equal to MaxDelay")
	}
	switch {
	case p.MaxAttempts < 1:
		reject("MaxAttempts", ruleAttempts)
	case p.MaxAttempts > AttemptsLimit:
		reject("MaxAttempts", ruleAttemptsLimit)
	}
	if !(p.Jitter >= 0 && p.Jitter <= 1) { // written so that NaN fails
		reject("Jitter", ruleJitter)
	}
	if p.ProbeInterval < 0 || p.ProbeInterval > DelayLimit {
		reject("ProbeInterval", ruleProbe)
	}
	return joinErrs(errs)
}

// Delay returns the un-jittered delay before retry number attempt (1-based):
//
//	min(MaxDelay, InitialDelay * 2^(attempt-1))
//
// An attempt below 1 is treated as 1. The computation cannot overflow for
// any attempt, up to math.MaxInt. Delay does not validate p; for a policy
// with a non-positive delay it returns 0, never a negative duration.
func (p Policy) Delay(attempt int) time.Duration {
	if p.InitialDelay <= 0 || p.MaxDelay <= 0 {
		return 0
	}
	shift := uint(max(attempt, 1) - 1)
	// InitialDelay<<shift <= MaxDelay exactly when InitialDelay <=
	// MaxDelay>>shift (floor division), so comparing against the shifted
	// cap decides without ever forming the overflowing product. Shifts of
	// 63 or more make the cap 0, which also selects MaxDelay.
	if p.InitialDelay > p.MaxDelay>>shift {
		return p.MaxDelay
	}
	return p.InitialDelay << shift
}

// StabilityWindow is how long a connection must stay up before its next
// loss starts a fresh outage budget. It equals MaxDelay, the longest spacing
// the schedule produces, rather than being a separate setting: a connection
// that outlives the longest backoff has demonstrably recovered, while one
// that dies sooner is treated as part of the same outage (a crash loop).
func (p Policy) StabilityWindow() time.Duration { return p.MaxDelay }
