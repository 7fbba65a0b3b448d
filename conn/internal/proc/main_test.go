package proc

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// awaitClosed waits, bounded, for ch.
func awaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not closed", what)
	}
}

// closedChan is a channel that is closed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// lines returns the non-empty lines of what tail kept.
func lines(tail *Tail) []string {
	var out []string
	for _, l := range strings.Split(string(tail.Bytes()), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
