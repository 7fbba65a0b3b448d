package conntest

import "time"

// Receive returns the next value of c, or fails tb if none arrives within
// limit; what names the awaited value in the failure.
func Receive[V any](tb T, c <-chan V, limit time.Duration, what string) V {
	tb.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case v := <-c:
		return v
	case <-timer.C:
		tb.Fatalf("no %s within %v", what, limit)
		var zero V
		return zero
	}
}
