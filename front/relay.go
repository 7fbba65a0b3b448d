package front

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onStream returns ctx with the values of the front request of ss in
// flight on server, if there is one: the SDK sends a message made under
// a request's values on that request's own stream (over Streamable
// HTTP, the response stream of the POST that made the call), which a
// client without a GET stream still reads. The context ends with ctx
// or with that front request, whichever ends first.
func (f *Front) onStream(ctx context.Context, ss *mcp.ServerSession, server string) (context.Context, context.CancelFunc) {
	req := f.requestContext(ss, server)
	if req == nil {
		return context.WithCancel(ctx)
	}
	c, cancel := context.WithCancel(withValues(ctx, req))
	stop := context.AfterFunc(req, cancel)
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

// progressTokens maps the progress tokens the front sends to the servers
// to the front client's own: every call gets a token of its own, so two
// clients that picked the same token never see each other's progress.
type progressTokens struct {
	next atomic.Uint64
	mu   sync.Mutex
	by   map[string]progressRoute // the servers' token -> the client's
}

// progressRoute is where a server's progress notification goes.
type progressRoute struct {
	ss      *mcp.ServerSession
	token   any             // the client's token
	ctx     context.Context // the client's request
	relayed chan struct{}   // a value at each notification relayed
}

// add records a call of ss under ctx whose client asked for progress
// with token, and returns the token to send to the server and the
// function that forgets it.
func (p *progressTokens) add(ctx context.Context, ss *mcp.ServerSession, token any) (string, progressRoute, func()) {
	ours := fmt.Sprintf("mcpfsm-%d", p.next.Add(1))
	r := progressRoute{ss: ss, token: token, ctx: ctx, relayed: make(chan struct{}, 1)}
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

func (p *progressTokens) lookup(token any) (progressRoute, bool) {
	s, ok := token.(string)
	if !ok {
		return progressRoute{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.by[s]
	return r, ok
}

// relayProgress sends a server's progress notification to the client
// whose call it is about, under the client's token, on that call's
// stream. It reports whether the token was one of the front's.
func (f *Front) relayProgress(ctx context.Context, server string, p *mcp.ProgressNotificationParams) bool {
	if p == nil {
		return false
	}
	r, ok := f.progress.lookup(p.ProgressToken)
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

// Bounds of settle.
const (
	progressQuiet  = 20 * time.Millisecond
	progressSettle = 200 * time.Millisecond
)

// settle waits, after the server answered a call, until no progress
// notification of the call was relayed for progressQuiet (at most
// progressSettle): the SDK hands a server's answer to the caller at
// once, but its notifications (sent before the answer) to the
// middleware only in turn, and a client drops progress that arrives
// after the result.
func (f *Front) settle(ctx context.Context, r progressRoute) { f.quietFor(ctx, r.relayed) }

// settleLogs is settle for the log messages of a call of ss to server,
// when ss asked for log messages (set a logging level): a message the
// server sent during the call still reaches it before the result, on the
// call's stream.
func (f *Front) settleLogs(ctx context.Context, ss *mcp.ServerSession, server string) {
	if f.levelOf(ss) == "" {
		return
	}
	if in := f.newest(ss, server); in != nil {
		f.quietFor(ctx, in.logged)
	}
}

// quietFor waits until relayed has had no value for progressQuiet, at
// most progressSettle, or until ctx ends.
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
