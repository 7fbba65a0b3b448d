package policy_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpfsm/mcpfsm/policy"
)

func ExampleParse() {
	p, err := policy.Parse([]byte(`{"maxDelayMs": 10000, "maxAttempts": 4}`), "servers.fs.reconnect")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("enabled=%v initial=%v max=%v attempts=%d window=%v\n",
		p.Enabled, p.InitialDelay, p.MaxDelay, p.MaxAttempts, p.StabilityWindow())
	// Output:
	// enabled=true initial=500ms max=10s attempts=4 window=10s
}

func ExampleParse_errors() {
	_, err := policy.Parse([]byte(`{"retries": 3, "maxAttempts": 2.5}`), "servers.fs.reconnect")
	fmt.Println(err)
	fmt.Println(errors.Is(err, policy.ErrInvalid))
	var fe *policy.FieldError
	if errors.As(err, &fe) {
		fmt.Printf("first: field=%s rule=%q\n", fe.Field, fe.Rule)
	}
	// Output:
	// servers.fs.reconnect.retries is not a reconnect option (known options: enabled, initialDelayMs, maxDelayMs, maxAttempts, jitter, probeIntervalMs)
	// servers.fs.reconnect.maxAttempts must be a positive integer
	// true
	// first: field=retries rule="is not a reconnect option (known options: enabled, initialDelayMs, maxDelayMs, maxAttempts, jitter, probeIntervalMs)"
}

func ExampleResolve() {
	initial, maxDelay := 5000.0, 1000.0
	_, err := policy.Resolve(&policy.Config{InitialDelayMs: &initial, MaxDelayMs: &maxDelay}, "servers.fs.reconnect")
	fmt.Println(err)
	// Output:
	// servers.fs.reconnect.initialDelayMs must be less than or equal to maxDelayMs
}

func ExamplePolicy_Delay() {
	p := policy.Default()
	var delays []time.Duration
	var total time.Duration
	for n := 1; n <= p.MaxAttempts; n++ {
		delays = append(delays, p.Delay(n))
		total += p.Delay(n)
	}
	fmt.Println(delays, "total", total)
	// Output:
	// [500ms 1s 2s 4s 8s 16s 30s 30s 30s 30s] total 2m31.5s
}

func ExamplePolicy_Validate() {
	fmt.Println(policy.Policy{InitialDelay: time.Second, MaxDelay: time.Minute}.Validate())
	// Output:
	// MaxAttempts must be a positive integer
}

// A server that never comes up: the initial attempt and every retry fail.
func ExampleBudget() {
	p := policy.Default()
	p.MaxAttempts = 3
	clk := clock.NewMock()
	b := policy.NewBudget(p, clk)
	for range 10 { // bounded, in case the budget never exhausts
		d := b.Down() // an attempt failed
		fmt.Println(d)
		if d.Exhausted() {
			break
		}
		clk.Add(d.Delay) // the supervisor's timer fires; it tries again
	}
	// Output:
	// retry in 500ms (attempt 1/3)
	// retry in 1s (attempt 2/3)
	// retry in 2s (attempt 3/3)
	// exhausted after 3/3 attempts
}

// A connection that stays up for the stability window has recovered: its
// loss starts a fresh budget. One that dies sooner continues the outage.
func ExampleBudget_stabilityWindow() {
	clk := clock.NewMock()
	b := policy.NewBudget(policy.Default(), clk)
	b.Down()
	b.Down()
	b.Up()
	clk.Add(5 * time.Second) // shorter than the 30s window
	fmt.Println(b.Down())
	b.Up()
	clk.Add(30 * time.Second)
	fmt.Println(b.Down())
	// Output:
	// retry in 2s (attempt 3/10)
	// retry in 500ms (attempt 1/10)
}

func ExampleWithRand() {
	p := policy.Default()
	p.Jitter = 0.2 // each delay within ±20% of the schedule
	seeded := rand.New(rand.NewPCG(1, 2))
	b := policy.NewBudget(p, clock.NewMock(), policy.WithRand(seeded.Float64))
	for range 3 {
		d := b.Down()
		fmt.Printf("attempt %d: %v around %v\n", d.Attempt, d.Delay.Round(time.Millisecond), p.Delay(d.Attempt))
	}
	// Output:
	// attempt 1: 535ms around 500ms
	// attempt 2: 985ms around 1s
	// attempt 3: 2.007s around 2s
}
