package front

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatedBackends holds the first Supervisors call after arm until open is
// closed: an update of a 2026-07-28 client with caller sign-in reads the
// registry, then the backends (awaitingSignIn).
type gatedBackends struct {
	*fakeBackends
	armed   chan struct{} // closed: the next call waits
	entered chan struct{} // closed by the call that waits
	open    chan struct{}
}

func (b *gatedBackends) Supervisors() []*conn.Supervisor {
	select {
	case <-b.armed:
		select {
		case <-b.entered:
		default:
			close(b.entered)
			<-b.open
		}
	default:
	}
	return b.fakeBackends.Supervisors()
}

// Two updates of a client at once (Sync's, at a change of the registry,
// and a reload's, say) apply their reads in order: the one that read
// the registry last syncs last. Before, the read was outside the sync's
// lock, and an update that read the registry before a server's tools
// came back could sync after one that read them: the client was served
// without them until the next change (front/sim seed 315: "unknown tool
// mcp__b__ask" 5 s after a reload restarted b, in one run of many).
func TestUpdatesApplyInOrder(t *testing.T) {
	reg := conn.NewRegistry()
	bs := &gatedBackends{fakeBackends: newFakeBackends(), armed: make(chan struct{}), entered: make(chan struct{}), open: make(chan struct{})}
	f := New(Options{Registry: reg, Backends: bs,
		CallerSignIn: func(string, string, func(context.Context) (string, error)) auth.OAuthHandler { return nil }})
	c := f.newClient(subjectClient, authz.Caller{Subject: "alice"})
	defer c.stop()

	close(bs.armed)
	first := make(chan struct{})
	go func() { defer close(first); c.update() }() // reads the registry without the tool, then waits
	<-bs.entered
	if _, err := reg.Register(conn.Tool{Name: "mcp__b__ask", Server: "b",
		Raw: &mcp.Tool{Name: "ask", InputSchema: &jsonschema.Schema{Type: "object"}}}); err != nil {
		t.Fatal(err)
	}
	second := make(chan struct{})
	go func() { defer close(second); c.update() }()
	// Let the second update end, or wait for the first.
	deadline := time.Now().Add(limit)
	for waiting := false; !waiting; {
		select {
		case <-second:
			waiting = true
		default:
			waiting = goroutineIn("front.(*client).update", "sync.(*Mutex).Lock")
		}
		if time.Now().After(deadline) {
			t.Fatal("the second update neither ended nor waited for the first")
		}
		runtime.Gosched()
	}
	close(bs.open)
	<-first
	<-second
	c.view.mu.Lock()
	served := slices.Sorted(func(yield func(string) bool) {
		for name := range c.view.served {
			if !yield(name) {
				return
			}
		}
	})
	c.view.mu.Unlock()
	if !slices.Contains(served, "mcp__b__ask") {
		t.Fatalf("served %v after both updates, want mcp__b__ask: an older read was synced last", served)
	}
}
