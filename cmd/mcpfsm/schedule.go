package main

import (
	"fmt"
	"math"
	"time"

	"github.com/mcpfsm/mcpfsm/policy"
)

// Schedule describes the reconnect policy for humans, such as
// "10 attempts, 500ms..30s, gives up after 2m31.5s".
func Schedule(p policy.Policy) string {
	if !p.Enabled {
		return "disabled: a failed or lost connection stays down"
	}
	attempts := "attempts"
	if p.MaxAttempts == 1 {
		attempts = "attempt"
	}
	// Sum the delays: they double until they reach MaxDelay, then stay.
	var total float64 // nanoseconds
	n := 1
	for ; n <= p.MaxAttempts; n++ {
		d := p.Delay(n)
		total += float64(d)
		if d >= p.MaxDelay {
			break
		}
	}
	if n < p.MaxAttempts {
		total += float64(p.MaxAttempts-n) * float64(p.MaxDelay)
	}
	var after string
	if total < float64(math.MaxInt64) {
		after = time.Duration(total).String()
	} else {
		after = fmt.Sprintf("about %.0f years", total/float64(365*24*time.Hour))
	}
	s := fmt.Sprintf("%d %s, %v..%v, gives up after %s", p.MaxAttempts, attempts, p.InitialDelay, p.MaxDelay, after)
	if p.Jitter > 0 {
		s += fmt.Sprintf(" (on average; delays jittered by ±%g%%)", p.Jitter*100)
	}
	if p.ProbeInterval > 0 {
		s += fmt.Sprintf(", then probes every %v", p.ProbeInterval)
	}
	return s
}
