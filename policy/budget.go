package policy

import (
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
)

// Budget counts the retries of one outage and decides, on each failure,
// whether to retry and after what delay.
//
// The caller reports two events. [Budget.Up] says a connection has just been
// established. [Budget.Down] says an attempt failed or an established
// connection was lost; it returns the [Decision]. Down first starts a fresh
// budget if the connection that just ended had been up for at least the
// policy's [Policy.StabilityWindow]; otherwise the failure belongs to the
// current outage. It then charges one attempt: attempts 1 to MaxAttempts
// are granted with the delay of [Policy.Delay] (jittered, see
// [Policy.JitteredDelay]), and the next Down is exhausted.
//
// So a server that never comes up is tried 1 + MaxAttempts times (the
// initial attempt and MaxAttempts retries), and a crash loop whose connects
// briefly succeed still exhausts, because an Up that lasts less than the
// window does not refund anything. A budget built from a disabled policy
// never grants a retry.
//
// A Budget is not safe for concurrent use: the supervisor that owns a
// connection serialises its events, and the budget is part of that state.
type Budget struct {
	policy   Policy
	clock    clock.Clock
	rand     func() float64
	attempts int       // attempts charged to the current outage
	up       bool      // a connection is established
	upSince  time.Time // when it was established, if up
}

// BudgetOption configures a [Budget].
type BudgetOption func(*Budget)

// WithRand sets the source of the random numbers in [0, 1) that jitter the
// delays; it is called once per granted retry when Jitter > 0. The default
// is math/rand/v2's Float64. Pass a seeded generator's method, such as
// rand.New(rand.NewPCG(1, 2)).Float64, for a reproducible schedule. A nil
// f keeps the default.
func WithRand(f func() float64) BudgetOption {
	return func(b *Budget) {
		if f != nil {
			b.rand = f
		}
	}
}

// NewBudget returns a fresh budget for p, reading time from clk (the real
// clock when clk is nil; a *clock.Mock in tests). It does not validate p:
// resolve or [Policy.Validate] it first.
func NewBudget(p Policy, clk clock.Clock, opts ...BudgetOption) *Budget {
	if clk == nil {
		clk = clock.New()
	}
	b := &Budget{policy: p, clock: clk, rand: rand.Float64}
	for _, o := range opts {
		o(b)
	}
	return b
}

// NewBudget is shorthand for the function [NewBudget] applied to p.
func (p Policy) NewBudget(clk clock.Clock, opts ...BudgetOption) *Budget {
	return NewBudget(p, clk, opts...)
}

// Up records that a connection was established now. It starts the uptime
// that the next Down compares with the stability window; an Up while
// already up is ignored, so the uptime counts from the first one.
func (b *Budget) Up() {
	if !b.up {
		b.up = true
		b.upSince = b.clock.Now()
	}
}

// Down records a failed attempt or a lost connection and decides what to do
// next; see [Budget]. After exhaustion every Down stays exhausted until
// [Budget.Reset] (or an Up that lasts the stability window). It is
// DownAt(now).
func (b *Budget) Down() Decision { return b.DownAt(b.clock.Now()) }

// DownAt is [Budget.Down] for a connection that was last known good at t:
// its uptime ends at t, however long it took to notice or to release it
// afterwards (a server that ignores EOF and SIGTERM, or a hang noticed by
// a keep-alive ping whose last answer came at t). A t before the Up counts as no uptime; a t
// after now counts as now.
func (b *Budget) DownAt(t time.Time) Decision {
	if now := b.clock.Now(); t.After(now) {
		t = now
	}
	if b.stableAt(t) {
		b.attempts = 0
	}
	b.up = false
	d := Decision{Attempt: b.attempts, MaxAttempts: b.policy.MaxAttempts}
	if !b.policy.Enabled || b.attempts >= b.policy.MaxAttempts {
		return d
	}
	b.attempts++
	d.Retry, d.Attempt = true, b.attempts
	if b.policy.Jitter > 0 {
		// Draw only when jittering, so that a seeded source yields the
		// same sequence whatever the policy did before.
		d.Delay = b.policy.JitteredDelay(b.attempts, b.rand())
	} else {
		d.Delay = b.policy.Delay(b.attempts)
	}
	return d
}

// Reset returns the budget to its initial state: no attempts charged, no
// connection up. Use it when a human or a config reload restarts recovery.
func (b *Budget) Reset() {
	b.attempts, b.up, b.upSince = 0, false, time.Time{}
}

// Attempts returns the number of retries charged to the current outage, as
// of now: 0 once the current connection has been up for the stability
// window, since its loss would start a fresh budget. Read it before Up to
// log which attempt succeeded.
func (b *Budget) Attempts() int {
	if b.stable() {
		return 0
	}
	return b.attempts
}

// Policy returns the policy the budget enforces.
func (b *Budget) Policy() Policy { return b.policy }

// stable reports whether a connection is up and has been for at least the
// stability window. The boundary is inclusive: uptime equal to the window
// is recovery.
func (b *Budget) stable() bool { return b.stableAt(b.clock.Now()) }

// stableAt is stable for a connection that ended at t.
func (b *Budget) stableAt(t time.Time) bool {
	return b.up && t.Sub(b.upSince) >= b.policy.StabilityWindow()
}

// Decision is the answer of [Budget.Down].
type Decision struct {
	// Retry is true when another attempt is granted after Delay, false
	// when the budget is exhausted (or the policy disabled).
	Retry bool
	// Attempt is the 1-based number of the granted retry; when
	// exhausted, the number of retries this outage used.
	Attempt int
	// MaxAttempts is the policy's budget, for "attempt n/N" logging.
	MaxAttempts int
	// Delay is how long to wait before the granted retry; 0 when
	// exhausted.
	Delay time.Duration
}

// Exhausted reports whether the decision is to stop retrying.
func (d Decision) Exhausted() bool { return !d.Retry }

// String renders the decision for humans: "retry in 500ms (attempt 1/10)"
// or "exhausted after 10/10 attempts".
func (d Decision) String() string {
	n := strconv.Itoa(d.Attempt) + "/" + strconv.Itoa(d.MaxAttempts)
	if d.Retry {
		return "retry in " + d.Delay.String() + " (attempt " + n + ")"
	}
	return "exhausted after " + n + " attempts"
}

// LogValue implements [slog.LogValuer] with the project's stable attribute
// keys: retry, attempt, max_attempts and, when retrying, delay.
func (d Decision) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Bool("retry", d.Retry),
		slog.Int("attempt", d.Attempt),
		slog.Int("max_attempts", d.MaxAttempts),
	}
	if d.Retry {
		attrs = append(attrs, slog.Duration("delay", d.Delay))
	}
	return slog.GroupValue(attrs...)
}
