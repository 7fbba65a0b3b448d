//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.

package front

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A classic client's roots are read when it has initialized and when it
// says they changed, and go to the instances that serve it as its own:
// its per-client instances, and on the stdio front every shared
// instance. A modern client cannot be asked outside a call: its roots
// are asked whenever a server asks for them (see answerRoots), in the
// call the server is serving, or in the call that is starting the
// instance, when the server asks as it starts (server-filesystem does):
// that call is in flight on the server (begin comes before the instance
// is used), so the server's roots/list becomes an input request of it.
// The answer is kept as the client's, for its next instance's start.
//
// Type roots holds a client's roots and reads them; the client sets
// them on its instances (client.forwardRoots).

// rootsTimeout bounds one roots/list to the front client.
const rootsTimeout = 10 * time.Second

// roots are one client's roots, as it last gave them, and the reads that
// keep them. A roots has two locks: rmu serialises the reads, so the
// newest is applied last, and mu guards the list; mu is taken last (no
// other lock is taken under it), and rmu before any lock of the client's
// or of its instances. The client makes one at its start, and its
// server's handlers and middleware call it (server.go); the instances
// that start for the client read the list (known).
type roots struct {
	logger *slog.Logger
	ctx    context.Context // the client's: a read at initialized ends with it
	// spawn runs fn on a goroutine the client waits for, unless the
	// client is closed, and reports whether it did.
	spawn func(fn func()) bool
	// forward sets the roots on the instances that serve the client as
	// its own, with no lock of the roots held.
	forward func([]*mcp.Root)

	rmu sync.Mutex

	mu   sync.Mutex
	list []*mcp.Root
	seen bool // roots were read (or answered, for a modern client)
	due  bool // the read at initialized failed: read at the next request
}

// changed reads the roots again: the client said they changed.
func (r *roots) changed(_ context.Context, req *mcp.RootsListChangedRequest) {
	r.fetch(req.Session)
}

// fetch reads the roots of ss ([roots.read]) off the SDK's goroutine: a
// request made from a notification handler would wait for itself.
func (r *roots) fetch(ss *mcp.ServerSession) {
	if ss == nil || !offersRoots(ss) {
		return
	}
	r.spawn(func() {
		ctx, cancel := context.WithTimeout(r.ctx, rootsTimeout)
		defer cancel()
		if err := r.read(ctx, ss); err != nil {
			// Over Streamable HTTP a request sent outside any call goes on
			// the GET stream, which the client opens after initialized, if
			// ever: read them on the stream of its first request instead.
			r.mu.Lock()
			r.due = true
			r.mu.Unlock()
			r.logger.Debug("roots of the client not read yet: "+err.Error()+"; they are read at its next request", "err", err)
		}
	})
}

// offersRoots reports whether ss is a classic client that offers roots.
func offersRoots(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.RootsV2 != nil && !modern(ss)
}

// middleware reads the roots of a client whose roots could not be read
// at initialized, or are not read yet (its first request may come before
// the read at initialized is done), at its first request that may reach
// a server, under that request's context and before the request goes
// on: over Streamable HTTP they travel on the request's own stream, and
// the instance the request starts gets them.
func (r *roots) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "resources/read", "prompts/get", "completion/complete", "resources/subscribe":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && r.unread(ss) {
				rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
				if err := r.read(rctx, ss); err != nil {
					r.logger.Warn("roots of the client not read: "+err.Error()+"; its servers keep the previous roots", "err", err)
				}
				cancel()
			}
		}
		return next(ctx, method, req)
	}
}

// read asks ss for its roots, keeps them, and forwards them to the
// instances that serve the client as its own, so that their servers hear
// of a change (notifications/roots/list_changed).
func (r *roots) read(ctx context.Context, ss *mcp.ServerSession) error {
	if !offersRoots(ss) {
		return nil
	}
	r.rmu.Lock()
	defer r.rmu.Unlock()
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return err
	}
	list := cloneRoots(res.Roots)
	r.mu.Lock()
	r.list, r.seen, r.due = list, true, false
	// An instance that starts from now on reads the list above (known);
	// one that started before is among those forward sets them on, after
	// r.mu is released.
	plantRootsForward(&r.mu, func() { r.forward(list) })
	return nil
}

// unread reports whether ss offers roots that were not read, or whose
// read at initialized failed.
func (r *roots) unread(ss *mcp.ServerSession) bool {
	if !offersRoots(ss) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.due || !r.seen
}

// known is a copy of the roots, if they were read.
func (r *roots) known() ([]*mcp.Root, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen {
		return nil, false
	}
	return cloneRoots(r.list), true
}

func cloneRoots(roots []*mcp.Root) []*mcp.Root {
	out := make([]*mcp.Root, 0, len(roots))
	for _, r := range roots {
		if r != nil {
			cp := *r
			out = append(out, &cp)
		}
	}
	return out
}

// from asks the client of the bridged call b for its roots, on behalf of
// server, and keeps them.
func (r *roots) from(ctx context.Context, b *bridge.Call, server string) (*mcp.ListRootsResult, error) {
	if roots, ok := b.Roots(); ok {
		// Asked already during this very call (to start the instance):
		// the same request's answer, not a list of another request.
		return &mcp.ListRootsResult{Roots: cloneRoots(roots)}, nil
	}
	res, err := b.Ask(ctx, server, &mcp.ListRootsParams{})
	if err != nil {
		return nil, wireError(err)
	}
	lr, ok := res.(*mcp.ListRootsResult)
	if !ok {
		return nil, fmt.Errorf("the client of mcpfsm answered a roots request with a %T", res)
	}
	b.KeepRoots(cloneRoots(lr.Roots))
	r.mu.Lock()
	r.list, r.seen = cloneRoots(lr.Roots), true
	r.mu.Unlock()
	return lr, nil
}
