package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// serveOutput is the sink of the stderr of a serve process the test
// starts (its log: its backends' stderr and every instance's
// transitions, with -log-level debug the instances' lines too): a
// lineLog to wait on, printed when the test fails (or runs with -v),
// after the process is gone. Every test that starts serve gives it one,
// so that CI's e2e stage shows serve's side of any failure. Call it
// before registering the cleanup that stops the process: cleanups run
// last first, and the log is printed after that one.
func serveOutput(t *testing.T, what string) *lineLog {
	t.Helper()
	l := newLineLog()
	t.Cleanup(func() {
		if (t.Failed() || testing.Verbose()) && l.len() > 0 {
			t.Logf("%s's log (its stderr):\n%s", what, l.dump())
		}
	})
	return l
}

// nthMatch returns the index just past the n-th line of lines, from
// index from on, that match accepts, and whether there are n such lines.
// Waiting for n instances to do one thing (each logs its own line) needs
// n distinct lines: matching from the same index n times finds the first
// line n times.
func nthMatch(lines []string, from, n int, match func(string) bool) (int, bool) {
	for i := from; i < len(lines); i++ {
		if match(lines[i]) {
			if n--; n == 0 {
				return i + 1, true
			}
		}
	}
	return len(lines), false
}

// awaitN waits, at most wait, until n distinct lines from index from on
// match, and returns the index just past the last of them.
func (l *lineLog) awaitN(t *testing.T, from, n int, what string, match func(string) bool) int {
	t.Helper()
	return l.awaitNWithin(t, wait, from, n, what, match)
}

// awaitNWithin is awaitN with a deadline of d.
func (l *lineLog) awaitNWithin(t *testing.T, d time.Duration, from, n int, what string, match func(string) bool) int {
	t.Helper()
	deadline := time.After(d)
	for {
		l.mu.Lock()
		next, ok := nthMatch(l.all, from, n, match)
		changed := l.changed
		l.mu.Unlock()
		if ok {
			return next
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %d lines of %s within %v; the lines so far:\n%s", n, what, d, l.dump())
		}
	}
}

// contains is a match of the lines that contain every one of parts.
func contains(parts ...string) func(string) bool {
	return func(l string) bool {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	}
}

// Waiting for two instances' reconnections needs two lines: the wait
// that issue 44's TestTSClientThroughServe/http failure came from
// matched the shared instance's line twice, from index 0, and the next
// call found the per-client instance still reconnecting. nthMatch is
// that wait's decision, on a log that holds one instance's line and then
// the other's.
func TestNthMatchNeedsDistinctLines(t *testing.T) {
	reconnected := contains(" server=fx state=established ", " generation=2 ")
	log := []string{
		"msg=killed",
		`msg="connected and registered tools" server=fx state=established from=connecting generation=2 protocol=2025-11-25`,
		`msg="connection lost; cause: EOF" instance=per-client server=fx state=lost-reconnecting generation=1`,
	}
	if next, ok := nthMatch(log, 1, 2, reconnected); ok {
		t.Fatalf("two reconnections found (up to line %d) in a log with one", next)
	}
	next, ok := nthMatch(log, 1, 1, reconnected)
	if !ok || next != 2 {
		t.Fatalf("nthMatch(1) = %d, %v; want 2, true", next, ok)
	}
	log = append(log, `msg="connected and registered tools" instance=per-client server=fx state=established from=connecting generation=2 protocol=2025-11-25`)
	if next, ok := nthMatch(log, 1, 2, reconnected); !ok || next != len(log) {
		t.Fatalf("nthMatch(2) = %d, %v; want %d, true", next, ok, len(log))
	}
}
