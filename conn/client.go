//lint:file-ignore SA1019 sampling, logging and roots are deprecated upstream (SEP-2577) but still served; the supervisor passes them through.

package conn

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK client of every generation: the user's options with the
// supervisor's handlers in front of theirs, the goroutine the user's
// handlers run on, the host's roots and the Propagate middleware.

// modulePath is this module's path, to find its version in build info.
const modulePath = "github.com/mcpfsm/mcpfsm"

// defaultImplementation is the client identity sent in initialize when
// Config.Implementation is nil: "mcpfsm" at the module's version as the
// build recorded it, "(devel)" when the build recorded none.
var defaultImplementation = sync.OnceValue(func() mcp.Implementation {
	v := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v = d.Replace.Version
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return mcp.Implementation{Name: "mcpfsm", Version: v}
})

// newClient builds the client of one generation: the user's options, with
// the supervisor's own handling composed in front of theirs. The SDK calls
// notification handlers one at a time on the session's handler goroutine,
// and a session whose handler is still running never reports its end; so
// the user's notification handlers are queued to the supervisor's handler
// goroutine, and its request handlers run on their own goroutine that the
// session stops waiting for once the request is cancelled (see
// [Config.Client]).
func (g *generation) newClient() *mcp.Client {
	s := g.sup
	var opts mcp.ClientOptions
	if s.cfg.Client != nil {
		opts = *s.cfg.Client
	}
	user := opts
	cb := s.ext.callbacks
	if opts.Logger == nil {
		opts.Logger = s.cfg.Logger
	}
	opts.Logger = opts.Logger.With("server", s.cfg.Name, "generation", g.id)
	// No KeepAlive here: the supervisor pings itself (generation.ping).
	opts.KeepAlive, opts.KeepAliveFailureThreshold = 0, 0

	// The supervisor's own handlers only signal: they run on the SDK's
	// handler goroutine, where blocking stalls the session.
	userTools := queued(cb, user.ToolListChangedHandler)
	opts.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		if g.wireConn() == nil { // else the wire signalled it (connectWire)
			g.signalChanged()
		}
		userTools(ctx, req)
	}
	userResources := queued(cb, user.ResourceListChangedHandler)
	opts.ResourceListChangedHandler = func(ctx context.Context, req *mcp.ResourceListChangedRequest) {
		g.catalogChanged()
		userResources(ctx, req)
	}
	userPrompts := queued(cb, user.PromptListChangedHandler)
	opts.PromptListChangedHandler = func(ctx context.Context, req *mcp.PromptListChangedRequest) {
		g.catalogChanged()
		userPrompts(ctx, req)
	}
	opts.ResourceUpdatedHandler = queuedOrNil(cb, user.ResourceUpdatedHandler)
	opts.LoggingMessageHandler = queuedOrNil(cb, user.LoggingMessageHandler)
	opts.ProgressNotificationHandler = queuedOrNil(cb, user.ProgressNotificationHandler)
	opts.ElicitationCompleteHandler = queuedOrNil(cb, user.ElicitationCompleteHandler)
	opts.ElicitationHandler = inRound(guarded(cb, user.ElicitationHandler))
	opts.CreateMessageHandler = inRound(guarded(cb, user.CreateMessageHandler))
	opts.CreateMessageWithToolsHandler = inRound(guarded(cb, user.CreateMessageWithToolsHandler))

	impl := defaultImplementation()
	if s.cfg.Implementation != nil {
		impl = *s.cfg.Implementation
	}
	client := mcp.NewClient(&impl, &opts)
	client.AddReceivingMiddleware(s.cfg.ClientMiddleware...)
	client.AddSendingMiddleware(sendInput)
	if s.cfg.Propagate != nil {
		client.AddSendingMiddleware(propagating(s.cfg.Propagate))
	}
	s.ext.roots.attach(client)
	return client
}

// maxQueued bounds the notifications waiting for a slow user handler: a
// server that floods notifications cannot grow the host's memory without
// bound. Beyond it, notifications are dropped and counted in the log.
const maxQueued = 1024

// callbacks runs the user's handlers off the SDK's goroutines. Notification
// handlers run one at a time, in arrival order, on one goroutine (order is
// kept across generations too); request handlers run each on its own
// goroutine. All of them get a context that is cancelled when Close is
// called, and Close waits for them, bounded by CloseTimeout.
type callbacks struct {
	s      *Supervisor
	queue  chan func(context.Context)
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool // Close was called: nothing new starts
	running sync.WaitGroup
	dropped int
}

// startCallbacks starts the handler goroutine, as one of the supervisor's
// workers, if the user set client options. It runs before the loop starts.
func (s *Supervisor) startCallbacks() {
	if s.cfg.Client == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &callbacks{s: s, queue: make(chan func(context.Context), maxQueued), ctx: ctx, cancel: cancel}
	s.ext.callbacks = c
	s.workers.Add(1)
	go c.run()
}

func (c *callbacks) run() {
	defer c.s.workers.Done()
	for {
		select {
		case f := <-c.queue:
			f(c.ctx)
		case <-c.s.closing:
			c.cancel()
			c.mu.Lock()
			c.closed = true
			c.mu.Unlock()
			c.running.Wait()
			return
		}
	}
}

// enqueue queues a notification for the handler goroutine without
// blocking the SDK's.
func (c *callbacks) enqueue(f func(context.Context)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	// Only enqueue sends, under c.mu, so a free slot now is still free
	// at the send. The drops are logged before the notification that
	// follows them is queued, so its handler runs after the log line.
	if len(c.queue) == cap(c.queue) {
		c.dropped++
		return
	}
	if c.dropped > 0 {
		c.s.cfg.Logger.Warn(fmt.Sprintf("%d server notifications were dropped: a Config.Client notification handler is too slow", c.dropped),
			"server", c.s.cfg.Name)
		c.dropped = 0
	}
	c.queue <- f
}

// queued returns a handler that queues h's calls, or one that does
// nothing when h is nil.
func queued[R any](c *callbacks, h func(context.Context, R)) func(context.Context, R) {
	if q := queuedOrNil(c, h); q != nil {
		return q
	}
	return func(context.Context, R) {}
}

// queuedOrNil is queued, but nil for a nil h, so the SDK sees no handler.
func queuedOrNil[R any](c *callbacks, h func(context.Context, R)) func(context.Context, R) {
	if h == nil || c == nil {
		return nil
	}
	return func(_ context.Context, req R) {
		c.enqueue(func(ctx context.Context) { h(ctx, req) })
	}
}

// guarded returns a request handler that runs h on its own goroutine and
// returns when h does or when the request is cancelled (the server
// cancelled it, its connection ended, or Close was called), whichever is
// first, so a handler that ignores cancellation cannot keep a dead session
// from ending.
func guarded[Req, Res any](c *callbacks, h func(context.Context, Req) (Res, error)) func(context.Context, Req) (Res, error) {
	if h == nil || c == nil {
		return nil
	}
	return func(ctx context.Context, req Req) (Res, error) {
		var zero Res
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return zero, fmt.Errorf("mcp server %q: %w", c.s.cfg.Name, ErrClosed)
		}
		c.running.Add(1)
		c.mu.Unlock()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(c.ctx, cancel)
		defer stop()
		type result struct {
			res Res
			err error
		}
		done := make(chan result, 1)
		go func() {
			defer c.running.Done()
			res, err := h(ctx, req)
			done <- result{res, err}
		}()
		select {
		case r := <-done:
			return r.res, r.err
		case <-ctx.Done():
			select {
			case r := <-done: // both were ready: the answer wins
				return r.res, r.err
			default:
				return zero, context.Cause(ctx)
			}
		}
	}
}

// inRound returns h, which the SDK calls for a server's request, marked
// as a round of the call it answers for (enterRound), so that a lost
// session retires the call while h runs; nil for a nil h.
func inRound[Req, Res any](h func(context.Context, Req) (Res, error)) func(context.Context, Req) (Res, error) {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, req Req) (Res, error) {
		exit, ok := enterRound(ctx)
		if !ok {
			var zero Res
			return zero, fmt.Errorf("the session ended before the host answered the server's input request: %w", mcp.ErrConnectionClosed)
		}
		res, err := h(ctx, req)
		return res, exit(err)
	}
}

// rootSet is the host's roots: every generation's client starts with them,
// and a change reaches the live client, whose sessions the SDK then sends
// notifications/roots/list_changed.
type rootSet struct {
	change sync.Mutex // serializes SetRoots, so clients see changes in order

	mu     sync.Mutex
	roots  []*mcp.Root
	client *mcp.Client // the newest generation's; older ones are retired
}

// attach gives a new generation's client the current roots, before it
// connects (so no notification is sent), and makes it the client later
// changes go to.
func (r *rootSet) attach(c *mcp.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.client = c
	if len(r.roots) > 0 {
		c.AddRoots(r.roots...)
	}
}

// SetRoots replaces the roots the host offers the server (the answer to
// its roots/list requests). Every later generation starts with them; a
// live session is sent notifications/roots/list_changed when they change.
// Each root needs a URI, and no URI may appear twice. SetRoots may block
// while the notification is written (the SDK bounds that at 10 seconds);
// it never waits for the supervisor.
func (s *Supervisor) SetRoots(roots ...*mcp.Root) error {
	next, err := cloneRoots(roots)
	if err != nil {
		return fmt.Errorf("conn: SetRoots: %w", err)
	}
	seen := map[string]bool{}
	for _, r := range next {
		seen[r.URI] = true
	}
	rs := &s.ext.roots
	rs.change.Lock()
	defer rs.change.Unlock()
	rs.mu.Lock()
	old, client := rs.roots, rs.client
	rs.roots = next
	rs.mu.Unlock()
	if client == nil || sameRoots(old, next) {
		return nil
	}
	var gone []string
	for _, r := range old {
		if !seen[r.URI] {
			gone = append(gone, r.URI)
		}
	}
	// A client attached after the swap above already has next; applying it
	// again changes nothing and notifies nobody new.
	if len(gone) > 0 {
		client.RemoveRoots(gone...)
	}
	if len(next) > 0 {
		client.AddRoots(next...)
	}
	return nil
}

// Roots returns a copy of the roots set with [Supervisor.SetRoots].
func (s *Supervisor) Roots() []*mcp.Root {
	s.ext.roots.mu.Lock()
	defer s.ext.roots.mu.Unlock()
	out := make([]*mcp.Root, len(s.ext.roots.roots))
	for i, r := range s.ext.roots.roots {
		c := *r
		out[i] = &c
	}
	return out
}

func sameRoots(a, b []*mcp.Root) bool {
	return slices.EqualFunc(a, b, func(x, y *mcp.Root) bool {
		return x.URI == y.URI && x.Name == y.Name && x.Meta == nil && y.Meta == nil
	})
}

// propagating is the sending middleware of Config.Propagate: every
// request (not notification) gets what prop sets for its context in a
// copy of its _meta, and carries it in its context to the HTTP transport.
func propagating(prop func(context.Context, func(key, value string))) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := req.GetParams()
			if p == nil || strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			var kv []string
			prop(ctx, func(key, value string) {
				if key != "" {
					kv = append(kv, key, value)
				}
			})
			if len(kv) == 0 {
				return next(ctx, method, req)
			}
			// A copy: the map may be the caller's (WithCallMeta).
			old := p.GetMeta()
			meta := make(map[string]any, len(old)+len(kv)/2)
			maps.Copy(meta, old)
			for i := 0; i < len(kv); i += 2 {
				meta[kv[i]] = kv[i+1]
			}
			p.SetMeta(meta)
			return next(transport.WithPropagated(ctx, kv), method, req)
		}
	}
}
