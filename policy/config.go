package policy

import (
	"math"
	"strconv"
	"time"
)

// Config is a raw reconnect configuration as written in a config file or
// built in code. A nil field means "use the default". Delays are in
// milliseconds and every number is a float64, so that values JSON can
// express but the policy must refuse (2.5 attempts, 0.5 ms) survive
// decoding and are rejected by [Resolve] with a precise message instead of
// being truncated silently.
//
// The JSON tags let Config be marshalled back (omitted fields stay omitted).
// Decode with [Parse], not with encoding/json directly: only Parse rejects
// unknown keys and wrong types with messages that name the field.
type Config struct {
	// Enabled turns reconnection on; default true.
	Enabled *bool `json:"enabled,omitempty"`
	// InitialDelayMs is the first retry delay in whole milliseconds,
	// 1 to DelayLimitMs; default 500.
	InitialDelayMs *float64 `json:"initialDelayMs,omitempty"`
	// MaxDelayMs caps the delay and sets the stability window, in whole
	// milliseconds, InitialDelayMs to DelayLimitMs; default 30000.
	MaxDelayMs *float64 `json:"maxDelayMs,omitempty"`
	// MaxAttempts is the number of retries per outage, an integer from 1
	// to AttemptsLimit; default 10.
	MaxAttempts *float64 `json:"maxAttempts,omitempty"`
	// Jitter is the fraction in [0, 1] by which delays are spread;
	// default 0 (none).
	Jitter *float64 `json:"jitter,omitempty"`
	// ProbeIntervalMs is how often an exhausted supervisor tries once
	// more, in whole milliseconds, 0 (no probing) to DelayLimitMs;
	// default 0.
	ProbeIntervalMs *float64 `json:"probeIntervalMs,omitempty"`
}

// Option names in the order they are documented, checked and reported.
const (
	keyEnabled      = "enabled"
	keyInitialDelay = "initialDelayMs"
	keyMaxDelay     = "maxDelayMs"
	keyMaxAttempts  = "maxAttempts"
	keyJitter       = "jitter"
	keyProbe        = "probeIntervalMs"
)

var knownKeys = []string{keyEnabled, keyInitialDelay, keyMaxDelay, keyMaxAttempts, keyJitter, keyProbe}

// Resolve turns cfg into a [Policy], applying defaults to nil fields and
// judging every bound, including the cross-field rule InitialDelayMs <=
// MaxDelayMs (checked after defaults, so a lone "maxDelayMs": 100 is
// rejected and the message says the initial delay was defaulted). A nil cfg
// yields [Default]. Resolve re-checks values that Parse has already seen
// because a Config built in code bypasses Parse; NaN and infinities can
// only arrive that way.
//
// path prefixes every message (for example "servers.fs.reconnect"); it may
// be empty. The error, if any, matches [ErrInvalid] and holds one
// [*FieldError] per broken rule.
func Resolve(cfg *Config, path string) (Policy, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	var errs []error
	reject := func(field, rule string) {
		errs = append(errs, &FieldError{Path: path, Field: field, Rule: rule})
	}

	p := Default()
	if cfg.Enabled != nil {
		p.Enabled = *cfg.Enabled
	}
	initial, initialOK := resolveDelay(cfg.InitialDelayMs, DefaultInitialDelay, keyInitialDelay, reject)
	maxDelay, maxOK := resolveDelay(cfg.MaxDelayMs, DefaultMaxDelay, keyMaxDelay, reject)
	if initialOK && maxOK && initial > maxDelay {
		rule := "must be less than or equal to " + keyMaxDelay
		switch {
		case cfg.InitialDelayMs == nil:
			rule += " (" + keyInitialDelay + " defaults to " + ms(DefaultInitialDelay) + "; set it explicitly)"
		case cfg.MaxDelayMs == nil:
			rule += " (" + keyMaxDelay + " defaults to " + ms(DefaultMaxDelay) + "; set it explicitly)"
		}
		reject(keyInitialDelay, rule)
	}
	p.InitialDelay, p.MaxDelay = initial, maxDelay

	if v := cfg.MaxAttempts; v != nil {
		switch n := *v; {
		case !(n >= 1) || n != math.Trunc(n): // NaN fails the first test
			reject(keyMaxAttempts, ruleAttempts)
		case n > AttemptsLimit:
			reject(keyMaxAttempts, ruleAttemptsLimit)
		default:
			p.MaxAttempts = int(n)
		}
	}
	if v := cfg.Jitter; v != nil {
		if !(*v >= 0 && *v <= 1) {
			reject(keyJitter, ruleJitter)
		} else {
			p.Jitter = *v
		}
	}
	if v := cfg.ProbeIntervalMs; v != nil {
		switch n := *v; {
		case !(n >= 0 && n <= DelayLimitMs): // NaN fails here
			reject(keyProbe, ruleProbeMs)
		case n != math.Trunc(n):
			reject(keyProbe, ruleWholeMs)
		default:
			p.ProbeInterval = time.Duration(n) * time.Millisecond
		}
	}
	if err := joinErrs(errs); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// resolveDelay converts an optional millisecond value, reporting whether it
// was acceptable so that the cross-field rule is judged only between two
// valid delays (an invalid one already has its own message).
func resolveDelay(v *float64, def time.Duration, field string, reject func(field, rule string)) (time.Duration, bool) {
	if v == nil {
		return def, true
	}
	n := *v
	if !(n > 0 && n <= DelayLimitMs) { // NaN and ±Inf fail here
		reject(field, ruleDelayMs)
		return 0, false
	}
	// Sub-millisecond precision is meaningless for reconnecting to a
	// server, and rejecting it keeps one integer <-> duration mapping with
	// no rounding rule to document or get wrong.
	if n != math.Trunc(n) {
		reject(field, ruleWholeMs)
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// ms formats a duration the way the config file spells it.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
