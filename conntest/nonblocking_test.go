package conntest_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// Recording and reporting never block the code under test, however far
// behind the test reads: these pushes would block on any bounded buffer.
func TestRecordingNeverBlocks(t *testing.T) {
	const n = 1 << 17
	rec := conntest.NewRecorder()
	for i := range n {
		rec.OnTransition(conn.Transition{Attempt: i})
	}
	for i := range 3 {
		if got := rec.Next(t, time.Second); got.Attempt != i {
			t.Fatalf("Next = attempt %d, want %d: order lost", got.Attempt, i)
		}
	}

	srv := conntest.NewServer(conntest.Refuse)
	defer srv.Close()
	open := srv.Transport()
	for range 2000 {
		if _, err := open.Open(context.Background()); err == nil {
			t.Fatal("Refuse opened a transport")
		}
	}
	for i := 1; i <= 3; i++ {
		select {
		case got := <-srv.Opened():
			if got != i {
				t.Fatalf("Opened = %d, want %d", got, i)
			}
		case <-time.After(time.Second):
			t.Fatalf("Opened delivered nothing for generation %d", i)
		}
	}
}
