package conn

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ackOrder reorders the acknowledgement of subscriptions/listen against the
// attempt's tools/list on the client's side of an in-memory connection:
// late holds the acknowledgement back until the listing's answer has been
// read; otherwise the session's connect (which sends subscriptions/listen)
// returns only once the acknowledgement is in.
type ackOrder struct {
	mcp.Connection
	late   bool
	acked  chan struct{} // closed once the acknowledgement was read
	listID atomic.Value  // jsonrpc.ID of the first tools/list
	held   jsonrpc.Message
	seen   bool // the listing's answer was read
	passed bool // the acknowledgement was returned by the last Read
}

func (c *ackOrder) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if ok && req.IsCall() && req.Method == "tools/list" {
		c.listID.CompareAndSwap(nil, req.ID)
	}
	if err := c.Connection.Write(ctx, msg); err != nil || c.late || !ok || req.Method != methodSubscriptionsListen {
		return err
	}
	// Early: the session's connect returns, and the attempt lists, only
	// once the acknowledgement is in.
	select {
	case <-c.acked:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *ackOrder) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.passed {
		// The reader is back for more: whoever wraps this connection
		// has handled the acknowledgement.
		c.passed = false
		close(c.acked)
	}
	if c.held != nil && c.seen {
		m := c.held
		c.held = nil
		c.passed = true
		return m, nil
	}
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == notificationListenAcked {
			if c.late && !c.seen {
				c.held = m
				continue
			}
			c.passed = true
			return m, nil
		}
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == c.listID.Load() {
			c.seen = true
		}
		return m, nil
	}
}

type ackOrderTransport struct {
	mcp.Transport
	late bool
}

func (t ackOrderTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &ackOrder{Connection: c, late: t.late, acked: make(chan struct{})}, nil
}

// The attempt does not wait for the server to acknowledge its
// subscriptions before it lists the tools. An acknowledgement that comes
// after the listing's answer starts one re-listing once the connection is
// up (logged at debug, not as a list change), since the first listing may
// predate the subscription; one that comes before the listing is
// requested starts none.
func TestLateSubscriptionAcknowledgementRelists(t *testing.T) {
	for _, late := range []bool{true, false} {
		t.Run(map[bool]string{true: "late", false: "early"}[late], func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "acks"}, nil)
			srv.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}}, nil)
			var lists atomic.Int32
			srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/list" {
						lists.Add(1)
					}
					return next(ctx, method, req)
				}
			})
			sessions := make(chan *mcp.ServerSession, 4)
			mem := memTransport(srv, sessions)
			trans := make(chan Transition, 16)
			logs := logLines{msgs: make(chan string, 64)}
			sup, err := Start(context.Background(), Config{
				Name: "fx", Registry: NewRegistry(), Clock: clock.NewMock(), Logger: slog.New(logs),
				OnTransition: func(tr Transition) { trans <- tr },
				Transport: TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
					tr, err := mem.Open(ctx)
					if err != nil {
						return nil, err
					}
					return ackOrderTransport{Transport: tr, late: late}, nil
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sup.Close(context.Background())
			expectTransition(t, trans, Established)
			<-sessions
			var g *generation
			var st SyncState
			done := make(chan struct{})
			sup.post(func() { g, st = sup.current, sup.current.sync.State(); close(done) })
			<-done
			if !late {
				if st != SyncIdle || lists.Load() != 1 {
					t.Fatalf("acknowledged before the listing: sync %s after %d listings, want %s after 1", st, lists.Load(), SyncIdle)
				}
				return
			}
			// The late acknowledgement's re-listing: a second tools/list,
			// and the machine back in sync.
			deadline := time.Now().Add(10 * time.Second)
			for {
				done := make(chan struct{})
				sup.post(func() { st = g.sync.State(); close(done) })
				<-done
				if st == SyncIdle && lists.Load() == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after a late acknowledgement: sync %s after %d listings, want %s after 2", st, lists.Load(), SyncIdle)
				}
				runtime.Gosched()
			}
			var msgs []string
			for len(logs.msgs) > 0 {
				msgs = append(msgs, <-logs.msgs)
			}
			all := strings.Join(msgs, "\n")
			if !strings.Contains(all, "re-listing: the server acknowledged its subscriptions after the attempt listed") {
				t.Errorf("no line for the re-listing in:\n%s", all)
			}
			if strings.Contains(all, "tool list changed") {
				t.Errorf("the re-listing was logged as a list change:\n%s", all)
			}
		})
	}
}
