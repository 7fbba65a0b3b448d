package conn

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

// A transition logged at a level the logger drops costs nothing: the
// message and its attributes are built only for a line that is written.
func TestDroppedTransitionLineAllocatesNothing(t *testing.T) {
	quietAboveError := slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	s := &Supervisor{cfg: resolved{Config: Config{Logger: quietAboveError, CloseTimeout: time.Second}}}
	tr := Transition{Server: "fx", From: Established, To: LostReconnecting, Event: EventConnectionLost,
		Attempt: 1, MaxAttempts: 5, Delay: time.Second, Err: &LostError{Server: "fx", Err: errors.New("EOF")}}
	if n := testing.AllocsPerRun(100, func() { s.logTransition(tr) }); n != 0 {
		t.Fatalf("logging a dropped transition allocated %v times; want 0", n)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
