//go:build !unix

package metrics_test

import "time"

var epoch = time.Now()

// cpuTime stands in with the monotonic wall clock where the process's
// CPU time is not at hand.
func cpuTime() time.Duration { return time.Since(epoch) }
