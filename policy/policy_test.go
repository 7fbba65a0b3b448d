package policy_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mcpfsm/mcpfsm/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaultSchedule is the reference implementation's schedule, written out
// by hand so that a change to Delay or Default cannot also change the
// expectation.
var defaultSchedule = []time.Duration{
	500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
	8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second,
	30 * time.Second, 30 * time.Second,
}

func TestDefault(t *testing.T) {
	want := policy.Policy{Enabled: true, InitialDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxAttempts: 10}
	got := policy.Default()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

func TestDelayDefaultSchedule(t *testing.T) {
	p := policy.Default()
	var got []time.Duration
	var sum time.Duration
	for n := 1; n <= p.MaxAttempts; n++ {
		got = append(got, p.Delay(n))
		sum += p.Delay(n)
	}
	if diff := cmp.Diff(defaultSchedule, got); diff != "" {
		t.Errorf("schedule mismatch (-want +got):\n%s", diff)
	}
	if want := 151500 * time.Millisecond; sum != want {
		t.Errorf("schedule sums to %v, want %v", sum, want)
	}
}

func TestDelay(t *testing.T) {
	tests := []struct {
		name    string
		p       policy.Policy
		attempt int
		want    time.Duration
	}{
		{"attempt 0 is attempt 1", policy.Default(), 0, 500 * time.Millisecond},
		{"negative attempt is attempt 1", policy.Default(), -5, 500 * time.Millisecond},
		{"math.MinInt is attempt 1", policy.Default(), math.MinInt, 500 * time.Millisecond},
		{"attempt one million", policy.Default(), 1_000_000, 30 * time.Second},
		{"math.MaxInt", policy.Default(), math.MaxInt, 30 * time.Second},
		{"attempt 64", policy.Default(), 64, 30 * time.Second},
		{"1ns doubles up to the limit", pol(time.Nanosecond, policy.DelayLimit), 40, 1 << 39},
		{"1ns at shift 62 under MaxInt64 cap", pol(time.Nanosecond, math.MaxInt64), 63, 1 << 62},
		{"1ns at shift 63 is capped", pol(time.Nanosecond, math.MaxInt64), 64, math.MaxInt64},
		{"1ns at the limit, huge attempt", pol(time.Nanosecond, policy.DelayLimit), math.MaxInt, policy.DelayLimit},
		{"initial equals max", pol(time.Second, time.Second), 3, time.Second},
		{"exact power of two hits the cap", pol(time.Second, 8*time.Second), 4, 8 * time.Second},
		{"one below the cap doubles no further", pol(time.Second, 8*time.Second-1), 4, 8*time.Second - 1},
		{"invalid: zero initial gives 0", pol(0, time.Second), 3, 0},
		{"invalid: negative max gives 0", pol(time.Second, -time.Second), 1, 0},
		{"invalid: initial above max gives max", pol(2*time.Second, time.Second), 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.attempt); got != tt.want {
				t.Errorf("Delay(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
}

func TestStabilityWindowIsMaxDelay(t *testing.T) {
	for _, p := range []policy.Policy{policy.Default(), pol(time.Millisecond, 7*time.Minute)} {
		if got := p.StabilityWindow(); got != p.MaxDelay {
			t.Errorf("StabilityWindow() = %v, want MaxDelay %v", got, p.MaxDelay)
		}
	}
}

func TestValidate(t *testing.T) {
	const durRule = " must be a positive duration no greater than 596h31m23.647s"
	valid := policy.Default()
	with := func(f func(*policy.Policy)) policy.Policy { p := valid; f(&p); return p }
	tests := []struct {
		name string
		p    policy.Policy
		want []string // one message per *FieldError, in order; nil means valid
	}{
		{"default", valid, nil},
		{"disabled but in bounds", with(func(p *policy.Policy) { p.Enabled = false }), nil},
		{"bounds inclusive", policy.Policy{InitialDelay: policy.DelayLimit, MaxDelay: policy.DelayLimit, MaxAttempts: policy.AttemptsLimit, Jitter: 1}, nil},
		{"zero policy", policy.Policy{}, []string{"InitialDelay" + durRule, "MaxDelay" + durRule, "MaxAttempts must be a positive integer"}},
		{"negative initial", with(func(p *policy.Policy) { p.InitialDelay = -1 }), []string{"InitialDelay" + durRule}},
		{"initial above limit", with(func(p *policy.Policy) { p.InitialDelay, p.MaxDelay = policy.DelayLimit+1, policy.DelayLimit }), []string{"InitialDelay" + durRule}},
		{"max above limit", with(func(p *policy.Policy) { p.MaxDelay = policy.DelayLimit + 1 }), []string{"MaxDelay" + durRule}},
		{"initial above max", with(func(p *policy.Policy) { p.InitialDelay = time.Minute }), []string{"InitialDelay must be less than or equal to MaxDelay"}},
		{"zero attempts", with(func(p *policy.Policy) { p.MaxAttempts = 0 }), []string{"MaxAttempts must be a positive integer"}},
		{"attempts above limit", with(func(p *policy.Policy) { p.MaxAttempts = policy.AttemptsLimit + 1 }), []string{"MaxAttempts must be a positive integer no greater than 2147483647"}},
		{"negative jitter", with(func(p *policy.Policy) { p.Jitter = -0.1 }), []string{"Jitter must be a number between 0 and 1"}},
		{"jitter above 1", with(func(p *policy.Policy) { p.Jitter = 1.01 }), []string{"Jitter must be a number between 0 and 1"}},
		{"NaN jitter", with(func(p *policy.Policy) { p.Jitter = math.NaN() }), []string{"Jitter must be a number between 0 and 1"}},
		{"probe interval", with(func(p *policy.Policy) { p.ProbeInterval = time.Hour }), nil},
		{"negative probe interval", with(func(p *policy.Policy) { p.ProbeInterval = -1 }), []string{"ProbeInterval must be 0 (no probing) or a positive duration no greater than 596h31m23.647s"}},
		{"probe interval above limit", with(func(p *policy.Policy) { p.ProbeInterval = policy.DelayLimit + 1 }), []string{"ProbeInterval must be 0 (no probing) or a positive duration no greater than 596h31m23.647s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if diff := cmp.Diff(tt.want, fieldMessages(t, err)); diff != "" {
				t.Errorf("Validate() messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func pol(initial, maxDelay time.Duration) policy.Policy {
	return policy.Policy{Enabled: true, InitialDelay: initial, MaxDelay: maxDelay, MaxAttempts: 10}
}

// fieldMessages checks the error contract (nil, or ErrInvalid holding
// *FieldError values whose messages make up the whole text) and returns the
// individual messages.
func fieldMessages(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	if !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("error %q does not match ErrInvalid", err)
	}
	var fe *policy.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %q (%T) holds no *FieldError", err, err)
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var msgs []string
	for _, e := range errs {
		if !errors.As(e, &fe) {
			t.Errorf("joined error %q (%T) is not a *FieldError", e, e)
		}
		msgs = append(msgs, e.Error())
	}
	return msgs
}
