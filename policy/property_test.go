package policy_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/mcpfsm/mcpfsm/policy"
)

// validPolicy draws any policy that Validate accepts.
func validPolicy(t *rapid.T) policy.Policy {
	initial := time.Duration(rapid.Int64Range(1, int64(policy.DelayLimit)).Draw(t, "initial"))
	return policy.Policy{
		Enabled:      rapid.Bool().Draw(t, "enabled"),
		InitialDelay: initial,
		MaxDelay:     time.Duration(rapid.Int64Range(int64(initial), int64(policy.DelayLimit)).Draw(t, "max")),
		MaxAttempts:  rapid.IntRange(1, 50).Draw(t, "attempts"),
		Jitter:       rapid.Float64Range(0, 1).Draw(t, "jitter"),
	}
}

// TestPropDelay compares Delay with the formula evaluated in arbitrary
// precision, and checks it is monotone and bounded.
func TestPropDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t)
		if err := p.Validate(); err != nil {
			t.Fatalf("generator produced an invalid policy: %v", err)
		}
		prev := time.Duration(0)
		for n := 1; n <= 70; n++ {
			got := p.Delay(n)
			want := new(big.Int).Lsh(big.NewInt(int64(p.InitialDelay)), uint(n-1))
			if want.Cmp(big.NewInt(int64(p.MaxDelay))) > 0 {
				want.SetInt64(int64(p.MaxDelay))
			}
			if got != time.Duration(want.Int64()) {
				t.Fatalf("Delay(%d) = %d, want %d", n, got, want.Int64())
			}
			if got < prev || got > p.MaxDelay || got < p.InitialDelay {
				t.Fatalf("Delay(%d) = %v after %v: not monotone within [%v, %v]", n, got, prev, p.InitialDelay, p.MaxDelay)
			}
			prev = got
		}
		if n := rapid.IntRange(71, math.MaxInt).Draw(t, "big attempt"); p.Delay(n) != p.MaxDelay {
			t.Fatalf("Delay(%d) = %v, want MaxDelay %v", n, p.Delay(n), p.MaxDelay)
		}
	})
}

func TestPropJitteredDelayBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t)
		n := rapid.IntRange(-5, 100).Draw(t, "attempt")
		r := rapid.Float64Range(0, 1).Draw(t, "r")
		got := p.JitteredDelay(n, r)
		if got < 0 || float64(got) > float64(p.MaxDelay)*(1+p.Jitter) {
			t.Fatalf("JitteredDelay(%d, %v) = %v, outside [0, %v*(1+%v)]", n, r, got, p.MaxDelay, p.Jitter)
		}
	})
}

// fakeClock is a clock.Clock whose Now is set directly. The property tests
// advance time thousands of times, and clock.Mock.Add yields with a real
// 1 ms sleep on every call; the Budget only ever calls Now.
type fakeClock struct {
	clock.Clock // nil: any other method panics, proving Budget does not use it
	now         time.Time
}

func (c *fakeClock) Now() time.Time { return c.now }

// TestPropBudget runs random sequences of Up, Down and clock advances
// against the specification of the outage budget.
func TestPropBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := validPolicy(t)
		p.Jitter = 0
		clk := &fakeClock{now: time.Unix(0, 0)}
		b := policy.NewBudget(p, clk)
		used, up, upAt := 0, false, time.Time{} // the model
		steps := rapid.SliceOfN(rapid.IntRange(0, 2), 1, 200).Draw(t, "events")
		for i, ev := range steps {
			switch ev {
			case 0: // advance by up to twice the window, sometimes exactly it
				w := int64(p.StabilityWindow())
				adv := rapid.OneOf(rapid.Just(w), rapid.Just(w-1), rapid.Int64Range(0, 2*w)).Draw(t, "advance")
				clk.now = clk.now.Add(time.Duration(adv))
			case 1:
				b.Up()
				if !up {
					up, upAt = true, clk.now
				}
			case 2:
				if up && clk.now.Sub(upAt) >= p.StabilityWindow() {
					used = 0
				}
				up = false
				d := b.Down()
				switch {
				case !p.Enabled || used == p.MaxAttempts:
					if d.Retry || d.Attempt != used || d.Delay != 0 {
						t.Fatalf("step %d: Down() = %+v, want exhausted after %d", i, d, used)
					}
				default:
					used++
					if !d.Retry || d.Attempt != used || d.Delay != p.Delay(used) {
						t.Fatalf("step %d: Down() = %+v, want retry %d after %v", i, d, used, p.Delay(used))
					}
				}
				if d.MaxAttempts != p.MaxAttempts {
					t.Fatalf("step %d: MaxAttempts %d, want %d", i, d.MaxAttempts, p.MaxAttempts)
				}
			}
		}
	})
}

// TestPropParseStructured builds objects from known and unknown keys with
// values of every JSON type, and checks Parse's contract on each.
func TestPropParseStructured(t *testing.T) {
	keys := []string{"enabled", "initialDelayMs", "maxDelayMs", "maxAttempts", "jitter", "retries", "Enabled", ""}
	values := rapid.OneOf(
		rapid.Float64().AsAny(),
		rapid.IntRange(-10, 100000).AsAny(),
		rapid.Bool().AsAny(),
		rapid.String().AsAny(),
		rapid.Just[any](nil),
		rapid.Just[any]([]any{1}),
	)
	rapid.Check(t, func(t *rapid.T) {
		obj := rapid.MapOf(rapid.SampledFrom(keys), values).Draw(t, "object")
		data, err := json.Marshal(obj)
		if err != nil {
			t.Skip("not representable in JSON:", err) // NaN and Inf floats
		}
		checkParseContract(t, data)
	})
}

func TestPropParseBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkParseContract(t, rapid.SliceOf(rapid.Byte()).Draw(t, "data"))
	})
}

// checkParseContract is what FuzzParse and the properties assert: Parse
// never panics; it returns a policy that passes Validate, or the zero
// policy and an error that matches ErrInvalid and holds a *FieldError.
func checkParseContract(t interface {
	Helper()
	Fatalf(string, ...any)
}, data []byte) {
	t.Helper()
	p, err := policy.Parse(data, "x")
	if err != nil {
		var fe *policy.FieldError
		if !errors.Is(err, policy.ErrInvalid) || !errors.As(err, &fe) {
			t.Fatalf("Parse(%q) error %v (%T) breaks the error contract", data, err, err)
		}
		if p != (policy.Policy{}) {
			t.Fatalf("Parse(%q) returned %+v alongside an error", data, p)
		}
		return
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Parse(%q) = %+v, which fails Validate: %v", data, p, err)
	}
}
