//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.

package front

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/mcpfsm/mcpfsm/front/internal/bugs"
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

// rootsTimeout bounds one roots/list to the front client.
const rootsTimeout = 10 * time.Second

func (c *client) initialized(_ context.Context, req *mcp.InitializedRequest) {
	c.adopt(req.Session)
	c.fetchRoots(req.Session)
	c.askSignIns()
}

func (c *client) rootsChanged(_ context.Context, req *mcp.RootsListChangedRequest) {
	c.fetchRoots(req.Session)
}

// fetchRoots reads the roots of c ([client.readRoots]) off the SDK's
// goroutine: a request made from a notification handler would wait for
// itself.
func (c *client) fetchRoots(ss *mcp.ServerSession) {
	if ss == nil || !offersRoots(ss) {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, rootsTimeout)
		defer cancel()
		if err := c.readRoots(ctx, ss); err != nil {
			// Over Streamable HTTP a request sent outside any call goes on
			// the GET stream, which the client opens after initialized, if
			// ever: read them on the stream of its first request instead.
			c.mu.Lock()
			c.rootsDue = true
			c.mu.Unlock()
			c.f.opts.Logger.Debug("roots of the client not read yet: "+err.Error()+"; they are read at its next request", "err", err)
		}
	}()
}

// offersRoots reports whether ss is a classic client that offers roots.
func offersRoots(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.RootsV2 != nil && !modern(ss)
}

// rootsMiddleware reads the roots of a client whose roots could not be
// read at initialized, or are not read yet (its first request may come
// before the read at initialized is done), at its first request that may
// reach a server, under that request's context and before the request
// goes on: over Streamable HTTP they travel on the request's own stream,
// and the instance the request starts gets them.
func (c *client) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "resources/read", "prompts/get", "completion/complete", "resources/subscribe":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && c.rootsUnread(ss) {
				rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
				if err := c.readRoots(rctx, ss); err != nil {
					c.f.opts.Logger.Warn("roots of the client not read: "+err.Error()+"; its servers keep the previous roots", "err", err)
				}
				cancel()
			}
		}
		return next(ctx, method, req)
	}
}

// readRoots asks ss for its roots and keeps them as c's, and sets them
// on the instances that serve c as its own, so that their servers hear
// of a change (notifications/roots/list_changed).
func (c *client) readRoots(ctx context.Context, ss *mcp.ServerSession) error {
	if !offersRoots(ss) {
		return nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return err
	}
	roots := cloneRoots(res.Roots)
	c.mu.Lock()
	c.roots, c.rootsSeen, c.rootsDue = roots, true, false
	instances := c.instanceSet()
	if !bugs.RootsLockReversed {
		c.mu.Unlock()
	}
	// An instance that starts now took the roots above, or is in the
	// list: Running waits for its start (see instanceSet).
	var sups []*conn.Supervisor
	for _, in := range instances {
		if sup := in.Running(); sup != nil {
			sups = append(sups, sup)
		}
	}
	if bugs.RootsLockReversed {
		c.mu.Unlock() // planted: the instances' locks were taken under c.mu
	}
	if c.kind == stdioClient {
		sups = append(sups, c.f.supervisors()...)
	}
	for _, sup := range sups {
		if err := sup.SetRoots(roots...); err != nil {
			c.f.opts.Logger.Warn("roots of the client not forwarded: "+err.Error(), "server", sup.Status().Server)
		}
	}
	return nil
}

// rootsUnread reports whether ss offers roots that c has not read, or
// whose read at initialized failed.
func (c *client) rootsUnread(ss *mcp.ServerSession) bool {
	if !offersRoots(ss) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rootsDue || !c.rootsSeen
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

// rootsFrom asks the client of the bridged call b for its roots, on
// behalf of server, and keeps them as c's.
func (c *client) rootsFrom(ctx context.Context, b *bridge.Call, server string) (*mcp.ListRootsResult, error) {
	if roots, ok := b.Roots(); ok {
		// Asked already during this very call (to start the instance):
		// the same request's answer, not a list of another request.
		return &mcp.ListRootsResult{Roots: cloneRoots(roots)}, nil
	}
	r, err := b.Ask(ctx, server, &mcp.ListRootsParams{})
	if err != nil {
		return nil, wireError(err)
	}
	res, ok := r.(*mcp.ListRootsResult)
	if !ok {
		return nil, fmt.Errorf("the client of mcpfsm answered a roots request with a %T", r)
	}
	b.KeepRoots(cloneRoots(res.Roots))
	c.mu.Lock()
	c.roots, c.rootsSeen = cloneRoots(res.Roots), true
	c.mu.Unlock()
	return res, nil
}
