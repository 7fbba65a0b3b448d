package policy_test

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/policy"
)

// TestBudgetNeverUp drives the supervisor's loop for a server that never
// comes up: the initial attempt fails, then every retry fails.
func TestBudgetNeverUp(t *testing.T) {
	clk := clock.NewMock()
	start := clk.Now()
	b := policy.NewBudget(policy.Default(), clk)
	var got []time.Duration
	tries := 1 // the initial attempt
	// Bounded so that a budget that never exhausts fails instead of hanging.
	for range 100 {
		d := b.Down()
		if d.Exhausted() {
			want := policy.Decision{Retry: false, Attempt: 10, MaxAttempts: 10}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("final decision mismatch (-want +got):\n%s", diff)
			}
			break
		}
		if d.Attempt != len(got)+1 || d.MaxAttempts != 10 {
			t.Fatalf("decision %d = %v, want attempt %d/10", len(got)+1, d, len(got)+1)
		}
		got = append(got, d.Delay)
		clk.Add(d.Delay)
		tries++
	}
	if diff := cmp.Diff(defaultSchedule, got); diff != "" {
		t.Errorf("budget schedule mismatch (-want +got):\n%s", diff)
	}
	if tries != 11 {
		t.Errorf("server tried %d times, want 1+MaxAttempts = 11", tries)
	}
	if elapsed := clk.Now().Sub(start); elapsed != 151500*time.Millisecond {
		t.Errorf("outage lasted %v, want 2m31.5s", elapsed)
	}
	for range 3 {
		if d := b.Down(); !d.Exhausted() || d.Attempt != 10 {
			t.Errorf("Down after exhaustion = %v, want exhausted after 10/10", d)
		}
	}
}

// TestBudgetStabilityWindow pins the boundary: uptime equal to the window
// starts a fresh budget, one nanosecond less does not.
func TestBudgetStabilityWindow(t *testing.T) {
	window := policy.Default().StabilityWindow()
	tests := []struct {
		name        string
		uptime      time.Duration
		wantAttempt int
	}{
		{"exactly the window resets", window, 1},
		{"well past the window resets", 24 * time.Hour, 1},
		{"one nanosecond short continues the outage", window - time.Nanosecond, 4},
		{"instant loss continues the outage", 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewMock()
			b := upAfterThreeDowns(clk)
			clk.Add(tt.uptime)
			if d := b.Down(); d.Attempt != tt.wantAttempt || !d.Retry {
				t.Errorf("Down after %v up = %v, want retry attempt %d", tt.uptime, d, tt.wantAttempt)
			}
		})
	}
}

// upAfterThreeDowns is a default budget that charged three attempts and
// then saw a connection come up.
func upAfterThreeDowns(clk clock.Clock) *policy.Budget {
	b := policy.NewBudget(policy.Default(), clk)
	for range 3 {
		b.Down()
	}
	b.Up()
	return b
}

// TestBudgetCrashLoopExhausts is the case a reset-on-connect counter gets
// wrong: every reconnect succeeds but dies after a second.
func TestBudgetCrashLoopExhausts(t *testing.T) {
	clk := clock.NewMock()
	b := policy.NewBudget(policy.Default(), clk)
	ups := 0
	d := b.Down() // the established connection is lost
	// Bounded, so that a budget laundered by the brief successes fails the
	// test instead of hanging it.
	for i := 0; d.Retry && i < 100; i++ {
		clk.Add(d.Delay)
		b.Up()
		ups++
		clk.Add(time.Second)
		d = b.Down()
	}
	if ups != 10 || d.Attempt != 10 {
		t.Errorf("crash loop: %d successful connects, final %v; want 10 and exhausted after 10/10", ups, d)
	}
}

// TestBudgetDownAtEndsUptimeWhenFirstKnownBad: a connection that went bad
// early but took longer than the window to release (a server ignoring EOF
// and SIGTERM, a hang noticed by a late ping) does not refund the budget.
func TestBudgetDownAtEndsUptimeWhenFirstKnownBad(t *testing.T) {
	window := policy.Default().StabilityWindow()
	tests := []struct {
		name        string
		badAfter    time.Duration // from Up to the first bad news
		noticed     time.Duration // from Up to the DownAt call
		wantAttempt int
	}{
		{"bad at once, released after twice the window", 0, 2 * window, 4},
		{"bad one nanosecond short of the window", window - time.Nanosecond, window + time.Hour, 4},
		{"bad exactly at the window resets", window, window + time.Hour, 1},
		{"bad before the Up counts as no uptime", -time.Hour, window * 3, 4},
		{"bad in the future counts as now", window * 10, window - time.Nanosecond, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewMock()
			b := upAfterThreeDowns(clk)
			up := clk.Now()
			clk.Add(tt.noticed)
			if d := b.DownAt(up.Add(tt.badAfter)); d.Attempt != tt.wantAttempt || !d.Retry {
				t.Errorf("DownAt(up+%v) at up+%v = %v, want retry attempt %d", tt.badAfter, tt.noticed, d, tt.wantAttempt)
			}
		})
	}
}

// TestBudgetRecoversIndefinitely: a server that stays up for the window
// between crashes never exhausts, and every outage starts at attempt 1.
func TestBudgetRecoversIndefinitely(t *testing.T) {
	p := policy.Default()
	p.MaxAttempts = 2
	clk := clock.NewMock()
	b := p.NewBudget(clk)
	for i := range 20 {
		d1 := b.Down()
		d2 := b.Down() // the first reconnect fails too
		if d1.Attempt != 1 || d2.Attempt != 2 || !d2.Retry {
			t.Fatalf("outage %d: decisions %v, %v; want attempts 1 and 2", i, d1, d2)
		}
		b.Up()
		clk.Add(p.StabilityWindow())
	}
}

func TestBudgetUpWhileUpKeepsFirstStart(t *testing.T) {
	clk := clock.NewMock()
	b := policy.NewBudget(policy.Default(), clk)
	b.Down()
	b.Down()
	b.Up()
	clk.Add(20 * time.Second)
	b.Up() // must not restart the uptime
	clk.Add(10 * time.Second)
	if d := b.Down(); d.Attempt != 1 {
		t.Errorf("Down after 30s of uptime = %v, want a fresh budget (attempt 1)", d)
	}
}

func TestBudgetAttempts(t *testing.T) {
	clk := clock.NewMock()
	b := policy.NewBudget(policy.Default(), clk)
	var got []int
	got = append(got, b.Attempts())
	b.Down()
	b.Down()
	got = append(got, b.Attempts())
	b.Up()
	got = append(got, b.Attempts()) // still charged: the uptime is short
	clk.Add(30 * time.Second)
	got = append(got, b.Attempts()) // the next loss would start afresh
	b.Down()
	got = append(got, b.Attempts())
	b.Reset()
	got = append(got, b.Attempts())
	if diff := cmp.Diff([]int{0, 2, 2, 0, 1, 0}, got); diff != "" {
		t.Errorf("Attempts() sequence mismatch (-want +got):\n%s", diff)
	}
}

func TestBudgetReset(t *testing.T) {
	p := policy.Default()
	p.MaxAttempts = 1
	b := policy.NewBudget(p, clock.NewMock())
	b.Down()
	if d := b.Down(); !d.Exhausted() {
		t.Fatalf("second Down = %v, want exhausted", d)
	}
	b.Reset()
	if d := b.Down(); !d.Retry || d.Attempt != 1 {
		t.Errorf("Down after Reset = %v, want retry attempt 1", d)
	}
	if diff := cmp.Diff(p, b.Policy()); diff != "" {
		t.Errorf("Policy() mismatch (-want +got):\n%s", diff)
	}
}

func TestBudgetDisabledNeverRetries(t *testing.T) {
	p := policy.Default()
	p.Enabled = false
	b := policy.NewBudget(p, clock.NewMock())
	want := policy.Decision{Retry: false, Attempt: 0, MaxAttempts: 10}
	if diff := cmp.Diff(want, b.Down()); diff != "" {
		t.Errorf("Down() on a disabled policy mismatch (-want +got):\n%s", diff)
	}
}

func TestBudgetJitterDeterministic(t *testing.T) {
	p := policy.Default()
	p.Jitter = 0.2
	schedule := func(seed uint64) []time.Duration {
		b := policy.NewBudget(p, clock.NewMock(), policy.WithRand(rand.New(rand.NewPCG(seed, seed)).Float64))
		var ds []time.Duration
		for d := b.Down(); d.Retry; d = b.Down() {
			ds = append(ds, d.Delay)
		}
		return ds
	}
	a, again, other := schedule(1), schedule(1), schedule(2)
	if diff := cmp.Diff(a, again); diff != "" {
		t.Errorf("same seed, different schedules (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, other) || cmp.Equal(a, defaultSchedule) {
		t.Errorf("jittered schedule %v does not depend on the seed or equals the plain schedule", a)
	}
	for i, d := range a {
		lo, hi := time.Duration(float64(defaultSchedule[i])*0.8), time.Duration(float64(defaultSchedule[i])*1.2)
		if d < lo || d > hi {
			t.Errorf("delay %d = %v, want in [%v, %v]", i+1, d, lo, hi)
		}
	}
}

func TestBudgetNoDrawWithoutJitter(t *testing.T) {
	b := policy.NewBudget(policy.Default(), clock.NewMock(), policy.WithRand(func() float64 {
		t.Error("random source called with Jitter 0")
		return 0.5
	}))
	b.Down()
}

func TestNewBudgetNilClockAndRand(t *testing.T) {
	p := policy.Default()
	p.Jitter = 1
	b := policy.NewBudget(p, nil, policy.WithRand(nil))
	if d := b.Down(); !d.Retry || d.Delay < 0 || d.Delay > time.Second {
		t.Errorf("Down() = %v, want a retry within [0, 1s]", d)
	}
}

func TestDecisionString(t *testing.T) {
	tests := []struct {
		d    policy.Decision
		want string
	}{
		{policy.Decision{Retry: true, Attempt: 1, MaxAttempts: 10, Delay: 500 * time.Millisecond}, "retry in 500ms (attempt 1/10)"},
		{policy.Decision{Attempt: 10, MaxAttempts: 10}, "exhausted after 10/10 attempts"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestDecisionLogValue(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Warn("connection lost", "decision", policy.Decision{Retry: true, Attempt: 2, MaxAttempts: 10, Delay: time.Second})
	logger.Error("giving up", "decision", policy.Decision{Attempt: 10, MaxAttempts: 10})
	want := `level=WARN msg="connection lost" decision.retry=true decision.attempt=2 decision.max_attempts=10 decision.delay=1s
level=ERROR msg="giving up" decision.retry=false decision.attempt=10 decision.max_attempts=10
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("log output mismatch (-want +got):\n%s", diff)
	}
}
