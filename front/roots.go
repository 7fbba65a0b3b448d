//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.

package front

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsRelay reads the front sessions' roots.
type rootsRelay struct {
	wg sync.WaitGroup // fetches in flight
	mu sync.Mutex     // serialises fetches, so the newest roots are applied last
}

// rootsTimeout bounds one roots/list to the front client.
const rootsTimeout = 10 * time.Second

func (f *Front) initialized(_ context.Context, req *mcp.InitializedRequest) {
	f.fetchRoots(req.Session)
}

func (f *Front) rootsChanged(_ context.Context, req *mcp.RootsListChangedRequest) {
	f.fetchRoots(req.Session)
}

// fetchRoots reads the roots of the front client ss ([Front.readRoots])
// off the SDK's goroutine: a request made from a notification handler
// would wait for itself.
func (f *Front) fetchRoots(ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	f.roots.wg.Add(1)
	go func() {
		defer f.roots.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), rootsTimeout)
		defer cancel()
		if err := f.readRoots(ctx, ss); err != nil {
			// Over Streamable HTTP a request sent outside any call goes on
			// the GET stream, which the client opens after initialized, if
			// ever: read them on the stream of its first request instead.
			f.setRootsPending(ss, true)
			f.opts.Logger.Debug("roots of the client not read yet: "+err.Error()+"; they are read at its next request", "err", err)
		}
	}()
}

// rootsMiddleware reads the roots of a session whose roots could not be
// read at initialized, or are not read yet (its first request may come
// before the read at initialized is done), at its first request that may
// reach a server, under that request's context and before the request
// goes on: over Streamable HTTP they travel on the request's own stream,
// and the server's roots/list during the request finds them.
func (f *Front) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "resources/read", "prompts/get", "completion/complete", "resources/subscribe":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && f.rootsUnread(ss) {
				rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
				if err := f.readRoots(rctx, ss); err != nil {
					f.opts.Logger.Warn("roots of the client not read: "+err.Error()+"; the servers keep the previous roots", "err", err)
				}
				cancel()
			}
		}
		return next(ctx, method, req)
	}
}

// readRoots asks ss for its roots, if it offers any, and keeps them as
// ss's: a server's roots/list is answered with the roots of the session
// it belongs to ([Front.ClientMiddlewareFor]). When ss is the only
// session, they are also set on every supervisor, so that the servers
// hear of a change (notifications/roots/list_changed); once a second
// session connects, the supervisors hold none, where a request outside
// any call would read another session's.
func (f *Front) readRoots(ctx context.Context, ss *mcp.ServerSession) error {
	p := ss.InitializeParams()
	offers := p != nil && p.Capabilities != nil && p.Capabilities.RootsV2 != nil
	f.roots.mu.Lock()
	defer f.roots.mu.Unlock()
	var roots []*mcp.Root
	only := len(f.connected()) == 1
	if offers {
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			return err
		}
		roots = res.Roots
		only = f.setRoots(ss, roots)
	}
	if f.opts.Supervisors == nil || !offers && only {
		return nil
	}
	if !only {
		roots = nil
	}
	for _, sup := range f.opts.Supervisors() {
		if err := sup.SetRoots(roots...); err != nil {
			f.opts.Logger.Warn("roots of the client not forwarded: "+err.Error(), "err", err)
		}
	}
	return nil
}

// Roots returns the roots of the only front session connected, and
// whether any were read; with several sessions connected (or none) it
// returns none. A host that starts a supervisor after the front client
// connected passes them as its conn.Config.Roots.
func (f *Front) Roots() ([]*mcp.Root, bool) {
	live := f.connected()
	if len(live) != 1 {
		return nil, false
	}
	return f.rootsOf(live[0])
}

// rootsUnread reports whether ss offers roots that the front has not
// read, or whose read at initialized failed; it clears the failure.
func (f *Front) rootsUnread(ss *mcp.ServerSession) bool {
	if f.setRootsPending(ss, false) {
		return true
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
		return false
	}
	_, known := f.rootsOf(ss)
	return !known
}

// wait waits for the roots fetches in flight.
func (r *rootsRelay) wait() { r.wg.Wait() }

func cloneRoots(roots []*mcp.Root) []*mcp.Root {
	out := make([]*mcp.Root, 0, len(roots))
	for _, r := range roots {
		if r != nil {
			c := *r
			out = append(out, &c)
		}
	}
	return out
}
