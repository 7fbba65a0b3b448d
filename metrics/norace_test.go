//go:build !race

package metrics_test

// raceEnabled reports whether the tests run under the race detector, whose
// runtime allocates when a goroutine starts.
const raceEnabled = false
