package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onStream returns ctx with the values of the request in, if any: the
// SDK sends a message made under a request's values on that request's
// own stream (over Streamable HTTP, the response stream of the POST that
// made the call), which a client without a GET stream still reads. The
// context ends with ctx or with that request, whichever ends first.
func onStream(ctx context.Context, in *inflight) (context.Context, context.CancelFunc) {
	if in == nil {
		return context.WithCancel(ctx)
	}
	c, cancel := context.WithCancel(withValues(ctx, in.ctx))
	stop := context.AfterFunc(in.ctx, cancel)
	return c, func() { stop(); cancel() }
}

// valuesOf is a context that ends as its Context does and holds the
// values of values first.
type valuesOf struct {
	context.Context
	values context.Context
}

func withValues(ctx, values context.Context) context.Context { return valuesOf{ctx, values} }

func (v valuesOf) Value(key any) any {
	if x := v.values.Value(key); x != nil {
		return x
	}
	return v.Context.Value(key)
}

// progressTokens map the progress tokens the front sends to the servers
// to the clients' own: every call gets a random token of its own, so two
// clients that picked the same token never see each other's progress,
// and a server cannot name another's.
type progressTokens struct {
	mu sync.Mutex
	by map[string]progressRoute // the servers' token -> the client's
}

// progressRoute is where a server's progress notification goes.
type progressRoute struct {
	owner   *calls // the calls of the client that asked
	server  string
	ss      *mcp.ServerSession
	token   any             // the client's token
	ctx     context.Context // the client's request
	relayed chan struct{}   // a value at each notification relayed
}

// add records a call to server in ss under ctx, of the client whose
// calls are owner, which asked for progress with token, and returns the
// token to send to the server and the function that forgets it.
func (p *progressTokens) add(ctx context.Context, owner *calls, server string, ss *mcp.ServerSession, token any) (string, progressRoute, func()) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	ours := "mcpfsm-" + hex.EncodeToString(b[:])
	r := progressRoute{owner: owner, server: server, ss: ss, token: token, ctx: ctx, relayed: make(chan struct{}, 1)}
	p.mu.Lock()
	if p.by == nil {
		p.by = map[string]progressRoute{}
	}
	p.by[ours] = r
	p.mu.Unlock()
	return ours, r, func() {
		p.mu.Lock()
		delete(p.by, ours)
		p.mu.Unlock()
	}
}

// lookup finds the route of token, if it is a call of server's (and
// one of only, when only is set: a per-client instance reaches its own
// client alone).
func (p *progressTokens) lookup(token any, server string, only *calls) (progressRoute, bool) {
	s, ok := token.(string)
	if !ok {
		return progressRoute{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.by[s]
	if !ok || r.server != server || only != nil && r.owner != only {
		return progressRoute{}, false
	}
	return r, true
}

// Bounds of quietFor.
const (
	progressQuiet  = 20 * time.Millisecond
	progressSettle = 200 * time.Millisecond
)

// quietFor waits until relayed has had no value for progressQuiet, at
// most progressSettle, or until ctx ends: a client drops progress that
// arrives after the result.
func quietFor(ctx context.Context, clk clock.Clock, relayed <-chan struct{}) {
	deadline := clk.Timer(progressSettle)
	defer deadline.Stop()
	for {
		quiet := clk.Timer(progressQuiet)
		select {
		case <-relayed:
			quiet.Stop()
		case <-quiet.C:
			return
		case <-deadline.C:
			quiet.Stop()
			return
		case <-ctx.Done():
			quiet.Stop()
			return
		}
	}
}

// inflight is one request of a client in flight on a server.
type inflight struct {
	// ctx is the request's context in the client's server: a message sent
	// under its values goes on the request's own stream.
	ctx context.Context
	ss  *mcp.ServerSession // the session that serves the request
	b   *bridge.Call       // the bridged call, for a 2026-07-28 client
	// logged has a value once a log message of the server was relayed
	// during the request (see client.settleLogs).
	logged chan struct{}
}

// calls are one client's requests in flight, by server, oldest first.
// A calls has a lock of its own, taken alone (no other lock is taken
// under it). The client holds one: its request handlers record each
// request on a server (begin), and the relays of the servers' requests
// and notifications (forward.go, logging.go) read it to find the call a
// message belongs to.
type calls struct {
	mu sync.Mutex
	by map[string][]*inflight // server -> requests in flight there, oldest first
}

func newCalls() *calls { return &calls{by: map[string][]*inflight{}} }

// begin records a request in flight on server, made under ctx in ss
// (nil for a modern client over HTTP) and bridged as b (or nil); the
// returned function ends it.
func (cs *calls) begin(ctx context.Context, ss *mcp.ServerSession, server string, b *bridge.Call) (*inflight, func()) {
	in := &inflight{ctx: ctx, ss: ss, b: b, logged: make(chan struct{}, 1)}
	cs.mu.Lock()
	cs.by[server] = append(cs.by[server], in)
	cs.mu.Unlock()
	return in, func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		cs.remove(server, func(x *inflight) bool { return x == in })
	}
}

// remove drops server's requests that match; cs.mu is held.
func (cs *calls) remove(server string, match func(*inflight) bool) {
	cs.by[server] = slices.DeleteFunc(cs.by[server], match)
	if len(cs.by[server]) == 0 {
		delete(cs.by, server)
	}
}

// newest is the newest request in flight on server, or nil.
func (cs *calls) newest(server string) *inflight {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if calls := cs.by[server]; len(calls) > 0 {
		return calls[len(calls)-1]
	}
	return nil
}

// count counts the requests in flight on server and returns the newest.
func (cs *calls) count(server string) (int, *inflight) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	calls := cs.by[server]
	if len(calls) == 0 {
		return 0, nil
	}
	return len(calls), calls[len(calls)-1]
}

// withBackend counts the requests in flight on server that are with the
// backend, not awaiting the client's answers to their input requests (a
// backend's new request is not theirs), and returns the newest.
func (cs *calls) withBackend(server string) (int, *inflight) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	var newest *inflight
	for _, in := range cs.by[server] {
		if in.b != nil && in.b.Awaiting() {
			continue
		}
		n, newest = n+1, in
	}
	return n, newest
}

// drop removes the bridged call b from the requests in flight: a lost
// call is over for its client (bridge.Options.Gone).
func (cs *calls) drop(b *bridge.Call) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for server := range cs.by {
		cs.remove(server, func(in *inflight) bool { return in.b == b })
	}
}
