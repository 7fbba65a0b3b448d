package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

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
	c       *client
	server  string
	ss      *mcp.ServerSession
	token   any             // the client's token
	ctx     context.Context // the client's request
	relayed chan struct{}   // a value at each notification relayed
}

// add records a call of c to server in ss under ctx, whose client asked
// for progress with token, and returns the token to send to the server
// and the function that forgets it.
func (p *progressTokens) add(ctx context.Context, c *client, server string, ss *mcp.ServerSession, token any) (string, progressRoute, func()) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	ours := "mcpfsm-" + hex.EncodeToString(b[:])
	r := progressRoute{c: c, server: server, ss: ss, token: token, ctx: ctx, relayed: make(chan struct{}, 1)}
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

// lookup finds the route of token, if it is a call of server's (and of
// only's, when only is set: a per-client instance reaches its own
// client alone).
func (p *progressTokens) lookup(token any, server string, only *client) (progressRoute, bool) {
	s, ok := token.(string)
	if !ok {
		return progressRoute{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.by[s]
	if !ok || r.server != server || only != nil && r.c != only {
		return progressRoute{}, false
	}
	return r, true
}

// relayProgress sends a server's progress notification to the client
// whose call it is about, under the client's token, on that call's
// stream. It reports whether the token was one of the front's.
func (f *Front) relayProgress(ctx context.Context, server string, only *client, p *mcp.ProgressNotificationParams) bool {
	if p == nil {
		return false
	}
	r, ok := f.progress.lookup(p.ProgressToken, server, only)
	if !ok {
		return false
	}
	m := *p
	m.Meta = nil
	m.ProgressToken = r.token
	err := r.ss.NotifyProgress(withValues(ctx, r.ctx), &m)
	if err != nil {
		// The call may have ended meanwhile: the session's other stream
		// still takes it.
		err = r.ss.NotifyProgress(ctx, &m)
	}
	if err != nil {
		f.opts.Logger.Debug("progress not relayed: "+err.Error(), "server", server)
	}
	select {
	case r.relayed <- struct{}{}:
	default:
	}
	return true
}

// Bounds of quietFor.
const (
	progressQuiet  = 20 * time.Millisecond
	progressSettle = 200 * time.Millisecond
)

// settleLogs waits, after the server answered a call of c's, for the
// log messages of the call when c asked for them (set a logging level):
// the SDK hands a server's answer to the caller at once, but its
// notifications (sent before the answer) to the middleware only in
// turn, and a message the server sent during the call should still
// reach the client before the result, on the call's stream.
func (c *client) settleLogs(ctx context.Context, in *inflight) {
	if c.levelOf() == "" {
		return
	}
	c.f.quietFor(ctx, in.logged)
}

// quietFor waits until relayed has had no value for progressQuiet, at
// most progressSettle, or until ctx ends: a client drops progress that
// arrives after the result.
func (f *Front) quietFor(ctx context.Context, relayed <-chan struct{}) {
	deadline := f.opts.Clock.Timer(progressSettle)
	defer deadline.Stop()
	for {
		quiet := f.opts.Clock.Timer(progressQuiet)
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
