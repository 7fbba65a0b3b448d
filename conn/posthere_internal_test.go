package conn

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPostHereRunsTheLoopInPlace: with no loop running, postHere runs the
// loop on the caller's goroutine and returns once the turn (and anything
// queued behind it) has run; with the loop running, it only queues, and
// the running loop takes the turn.
func TestPostHereRunsTheLoopInPlace(t *testing.T) {
	sessions := make(chan *mcp.ServerSession, 4)
	sup, err := Start(context.Background(), Config{Name: "fx", Registry: NewRegistry(), Transport: memTransport(oneToolServer("here"), sessions), FailOnStartupError: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	waitFor(t, "the loop idle", func() bool { return loopIdle(sup) })

	ran := false
	if !sup.postHere(func() { ran = true }) {
		t.Fatal("postHere refused a turn on a live supervisor")
	}
	if !ran {
		t.Fatal("postHere returned before its turn ran, with no loop running")
	}
	if !loopIdle(sup) {
		t.Fatal("the loop run by postHere did not end with its queue")
	}

	// A running loop (held in a turn) takes the turn itself.
	hold, held := make(chan struct{}), make(chan struct{})
	sup.post(func() { close(held); <-hold })
	<-held
	took := make(chan struct{})
	sup.postHere(func() { close(took) })
	select {
	case <-took:
		t.Fatal("postHere ran its turn beside a running loop")
	default:
	}
	close(hold)
	select {
	case <-took:
	case <-time.After(10 * time.Second):
		t.Fatal("the running loop never took the turn postHere queued")
	}
}
