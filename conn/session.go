package conn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a generation's session is asked, and the bounds every request runs
// in: the attempt's listing and preparation, the subscriptions caught up
// once it is established, the host's requests (WithSession, Subscribe),
// and the one request path (request) with its list of in-flight calls,
// their contexts and the deadlines on the supervisor's clock.

// sessionState is what a Supervisor keeps about the MCP session beyond its
// tools: the established generation for WithSession, the host's roots and
// resource subscriptions (re-sent to every generation), the handler
// goroutine of Config.Client and the published catalog.
type sessionState struct {
	live      atomic.Pointer[generation] // the established generation, until the next one is
	callbacks *callbacks                 // nil without Config.Client
	roots     rootSet

	subMu   sync.Mutex
	subs    []string      // resource URIs subscribed through the supervisor, in order
	subSend chan struct{} // held (buffered 1) while the list changes and the change is sent
}

// genSession is what a generation keeps beyond its tools: the catalog it
// listed at connect, the subscriptions it sent then, and the state of its
// catalog re-sync.
type genSession struct {
	listed *serverCatalog // phase one's catalog, published when the attempt succeeds
	sent   []string       // the subscriptions phase one sent
	takes  bool           // the server takes subscriptions

	mu            sync.Mutex
	live          bool // established: a list_changed re-syncs now
	syncing, more bool // a catalog re-sync runs; another must follow
}

// changed records a resources or prompts list_changed. It reports
// whether the caller must start a catalog re-sync now: the generation is
// established and no re-sync runs. Otherwise one follows, once the
// generation is established or after the one that runs.
func (x *genSession) changed() (start bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.live || x.syncing {
		x.more = true
		return false
	}
	x.syncing, x.more = true, false
	return true
}

// again reports whether another round must follow the catalog re-sync
// that just ended: a list_changed came meanwhile and down, called under
// the lock, reports the generation still up. If not, the re-sync is over.
func (x *genSession) again(down func() bool) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.more || down() {
		x.syncing = false
		return false
	}
	x.more = false
	return true
}

// establish marks the generation established, so a list_changed re-syncs
// at once from now on, and reports whether one came while it connected.
func (x *genSession) establish() (resync bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.live = true
	return x.more
}

// startSession sets up what the supervisor keeps beyond tools: the
// initial roots, the catalog reservation (released with the registry's)
// and the handler goroutine. Start calls it before the loop runs.
func (s *Supervisor) startSession() error {
	s.ext.roots.roots = s.cfg.Roots
	s.ext.subSend = make(chan struct{}, 1)
	if c := s.cfg.Catalog; c != nil {
		release, err := c.reserve(s.cfg.Name, s)
		if err != nil {
			return err
		}
		if prev := s.release; prev != nil {
			s.release = func() { prev(); release() }
		} else {
			s.release = release
		}
	}
	s.startCallbacks()
	return nil
}

// listTools is phase one of a tool sync: fetch every page and build the
// whole next set of tools, or fail and change nothing.
func (g *generation) listTools(ctx context.Context) ([]Tool, error) {
	s := g.sup
	var out []Tool
	seen := map[string]bool{}
	hidden := 0
	pages := plantToolPages(ctx, g.sess, g.sess.Tools(ctx, nil))
	for raw, err := range pages {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", causeOf(ctx, err))
		}
		if raw == nil {
			continue
		}
		if s.cfg.Filter != nil && !s.cfg.Filter(raw.Name) {
			hidden++
			continue
		}
		if seen[raw.Name] {
			return nil, fmt.Errorf("%w: tool %q is listed twice", ErrInvalidToolList, raw.Name)
		}
		if len(out) == MaxTools {
			return nil, fmt.Errorf("%w: more than %d tools", ErrInvalidToolList, MaxTools)
		}
		seen[raw.Name] = true
		out = append(out, Tool{Name: PublicToolName(s.cfg.Name, raw.Name), Server: s.cfg.Name, Raw: raw, gen: g})
	}
	g.hidden.Store(int32(hidden))
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("%w: tools %q and %q share the public name %q",
				ErrInvalidToolList, out[i-1].Raw.Name, out[i].Raw.Name, out[i].Name)
		}
	}
	return out, nil
}

// signalChanged is the SDK's ToolListChangedHandler.
func (g *generation) signalChanged() {
	g.changed.Store(true)
	g.sup.kick()
}

// prepare is the rest of phase one after the tools are listed: re-send the
// subscriptions and list the catalog, within the attempt's deadline. A
// subscription the server refuses is logged, not fatal: the resource may be
// gone for good. A catalog the server advertises but cannot list fails the
// attempt, like a tool list.
func (g *generation) prepare(ctx context.Context) error {
	s := g.sup
	caps := g.sess.InitializeResult().Capabilities
	if caps != nil && caps.Resources != nil && caps.Resources.Subscribe {
		g.ext.takes, g.ext.sent = true, s.Subscriptions()
		for _, uri := range g.ext.sent {
			if err := g.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("re-subscribe %q: %w", uri, causeOf(ctx, err))
				}
				err = redact.Error(err)
				s.cfg.Logger.Warn("resource subscription refused by the new session: "+err.Error(),
					"server", s.cfg.Name, "generation", g.id, "uri", uri, "err", err)
			}
		}
	}
	if s.cfg.Catalog == nil {
		return nil
	}
	cat, err := g.listCatalog(ctx)
	if err != nil {
		return err
	}
	g.ext.listed = cat
	return nil
}

// catchUpSubscriptions sends g what Subscribe and Unsubscribe changed
// after its attempt sent the subscriptions: they found no generation up
// (ErrUnavailable) and left the change to this one. It runs after g is
// the live generation, so a later change goes to g itself; one made
// meanwhile may be sent twice, which changes nothing.
func (s *Supervisor) catchUpSubscriptions(g *generation) {
	if !g.ext.takes {
		return
	}
	if add, drop := subsDiff(s.Subscriptions(), g.ext.sent); len(add)+len(drop) == 0 {
		return
	}
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.CallTimeout)
		defer cancel()
		if _, err := s.lockSubs(ctx); err != nil {
			return // retired, or the server is too slow: the next generation gets them
		}
		defer s.unlockSubs()
		add, drop := subsDiff(s.Subscriptions(), g.ext.sent)
		for _, uri := range add {
			if err := g.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				s.cfg.Logger.Warn("resource subscription made while connecting was refused: "+redact.Error(err).Error(),
					"server", s.cfg.Name, "generation", g.id, "uri", uri, "err", redact.Error(err))
			}
		}
		for _, uri := range drop {
			_ = g.sess.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
	}()
}

// subsDiff returns what is in want and not in sent, and the reverse.
func subsDiff(want, sent []string) (add, drop []string) {
	for _, uri := range want {
		if !slices.Contains(sent, uri) {
			add = append(add, uri)
		}
	}
	for _, uri := range sent {
		if !slices.Contains(want, uri) {
			drop = append(drop, uri)
		}
	}
	return add, drop
}

// WithSession runs f with the session of the current established
// generation: the escape hatch to every request the SDK's
// *mcp.ClientSession offers (resources/read, prompts/get,
// completion/complete, logging/setLevel, ...). The context f gets is
// bounded by CallTimeout and cancelled when the generation is retired, like
// a tool call's; f must not keep the session beyond its return.
//
// With no established generation (connecting, during an outage, after
// exhaustion or Close) WithSession fails fast with an error matching
// [ErrUnavailable], without calling f. If the generation is lost while f
// runs, the error f returns is wrapped so that it matches ErrUnavailable
// too. Otherwise it returns f's error as is.
func (s *Supervisor) WithSession(ctx context.Context, f func(context.Context, *mcp.ClientSession) error) error {
	return s.withSession(ctx, time.Time{}, f)
}

// withSession is WithSession for a request that started at since (zero:
// now), from which its CallTimeout counts.
func (s *Supervisor) withSession(ctx context.Context, since time.Time, f func(context.Context, *mcp.ClientSession) error) error {
	g := s.ext.live.Load()
	if g == nil {
		return &unavailableError{server: s.cfg.Name, state: s.State()}
	}
	return g.request(ctx, "", since, func(ctx context.Context) error { return f(ctx, g.sess) })
}

// ReadResource reads a resource of the server through [Supervisor.WithSession].
func (s *Supervisor) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := s.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	return res, err
}

// GetPrompt gets a prompt of the server, by its name on the server, through
// [Supervisor.WithSession].
func (s *Supervisor) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := s.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	return res, err
}

// Subscribe subscribes to updates of the resource at uri, for this and
// every later generation: a reconnect re-sends the subscription before the
// generation is established. Updates arrive at
// Config.Client.ResourceUpdatedHandler. It returns the error of sending the
// subscription to the current session; during an outage that error matches
// [ErrUnavailable] but the subscription is kept, and sent when the server
// is back (a generation that was connecting meanwhile gets it once it is
// established). Subscribing twice to one uri is one subscription.
// Subscribe and Unsubscribe calls take effect one at a time, in the order
// they change the list, so the server ends with the subscriptions the
// list holds; a call that waits for another counts its CallTimeout from
// its start.
func (s *Supervisor) Subscribe(ctx context.Context, uri string) error {
	if uri == "" {
		return errors.New("conn: Subscribe: empty resource URI")
	}
	since, err := s.lockSubs(ctx)
	if err != nil {
		return err
	}
	defer s.unlockSubs()
	s.ext.subMu.Lock()
	if !slices.Contains(s.ext.subs, uri) {
		s.ext.subs = append(s.ext.subs, uri)
	}
	s.ext.subMu.Unlock()
	return s.withSession(ctx, since, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe ends a subscription made with [Supervisor.Subscribe]: later
// generations no longer get it, and the current session, if any, is told.
// During an outage it returns an error matching [ErrUnavailable], but the
// subscription is forgotten all the same.
func (s *Supervisor) Unsubscribe(ctx context.Context, uri string) error {
	since, err := s.lockSubs(ctx)
	if err != nil {
		return err
	}
	defer s.unlockSubs()
	s.ext.subMu.Lock()
	s.ext.subs = slices.DeleteFunc(s.ext.subs, func(u string) bool { return u == uri })
	s.ext.subMu.Unlock()
	return s.withSession(ctx, since, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// lockSubs takes the right to change the subscriptions, so that the list
// and what the server is sent change in the same order; it gives up when
// ctx ends. A channel rather than a mutex: its wait can end with ctx. A
// caller that waited gets when it started, from which its CallTimeout
// counts (zero for one that did not wait).
func (s *Supervisor) lockSubs(ctx context.Context) (since time.Time, err error) {
	select {
	case s.ext.subSend <- struct{}{}:
		return time.Time{}, nil
	default:
	}
	since = s.clk.Now()
	select {
	case s.ext.subSend <- struct{}{}:
		return since, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (s *Supervisor) unlockSubs() { <-s.ext.subSend }

// Subscriptions returns the resource URIs subscribed through the
// supervisor, in the order they were first subscribed.
func (s *Supervisor) Subscriptions() []string {
	s.ext.subMu.Lock()
	defer s.ext.subMu.Unlock()
	return slices.Clone(s.ext.subs)
}

// request runs do on g's session as one request of a caller, the single
// path of tool calls and WithSession: bounded by CallTimeout, retired at
// once when g shuts down, and failing with the one unavailable error
// (matching ErrUnavailable) when g is down or goes away under it. tool is
// the public name of the tool called, "" for another request. since is
// when the request started, if earlier than now (a call that waited for a
// slot of MaxConcurrentCalls): CallTimeout counts from there.
func (g *generation) request(ctx context.Context, tool string, since time.Time, do func(context.Context) error) error {
	if g.down() || g.connEnded() {
		return g.unavailable(tool, nil)
	}
	n, ok := g.calls.start(ctx, g.sup.clk, g.sup.cfg.CallTimeout, since)
	if !ok {
		return g.unavailable(tool, nil)
	}
	defer g.calls.end(n)
	err := do(plantCallContext(n))
	if err != nil && n.expired() {
		what := "the request"
		if tool != "" {
			what = fmt.Sprintf("tool %q", tool)
		}
		return fmt.Errorf("mcp server %q: %s did not answer within CallTimeout (%v): %w: %w",
			g.sup.cfg.Name, what, g.sup.cfg.CallTimeout, context.DeadlineExceeded, err)
	}
	if err != nil && (g.down() || transport.ConnectionGone(err) || g.needsSignIn(err)) {
		return g.unavailable(tool, g.requestFailed(err))
	}
	return err
}

// needsSignIn reports a request refused because the OAuth handler holds
// no usable credential: the connection is lost to a sign-in.
func (g *generation) needsSignIn(err error) bool {
	return errors.Is(err, ErrNeedsAuthorization) && g.signInHow() != ""
}

// unavailable is the error of a request g fails fast. It names the
// supervisor's state, unless the connection ended at this instant and the
// state is one the loop passes through on a loss (which of them the
// request sees is chance). A state that waits for something outside the
// loop (a sign-in, a Reconnect, Close) is always named: it says what the
// caller can do.
func (g *generation) unavailable(tool string, cause error) error {
	st := g.sup.State()
	return &unavailableError{server: g.sup.cfg.Name, tool: tool, state: st, endedNow: recovering(st) && g.endedNow(), cause: redact.Error(cause)}
}

// wireConn returns the generation's wired connection, if its transport has
// one (every transport but Streamable HTTP).
func (g *generation) wireConn() *transport.WireConn {
	g.mu.Lock()
	w := g.wire
	g.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Conn()
}

// connEnded reports whether g's wired connection has read its end (which
// the generation may not have heard yet): a request sent now would only
// find the SDK closing.
func (g *generation) connEnded() bool {
	w := g.wireConn()
	return w != nil && w.Ended()
}

// endedNow reports whether g's connection ended at this instant of the
// supervisor's clock: g left up now, or its connection ended and g has not
// heard yet. The supervisor's loop moves on from g at that instant, so the
// state a fast-failed request would name is chance.
func (g *generation) endedNow() bool {
	if !g.down() {
		return g.connEnded()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.life.downAt.Equal(g.sup.clk.Now())
}

// withTimeout is context.WithTimeout on the supervisor's clock. It does not
// use clock.Mock's own WithTimeout, whose Err reads its state without a
// lock (a data race under -race); the expiry is the context's cause, so
// context.Cause(ctx) reports context.DeadlineExceeded.
func withTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clk.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// calls tracks a generation's in-flight tool calls, so that every call is
// bounded by CallTimeout and retired when the generation is shut down,
// without a timer and a context.AfterFunc per call: the calls sit in a
// list in start order, which is also deadline order (every call gets the
// same CallTimeout), and one timer per generation watches the head. Each
// call's context is its own node in the list (see callCtx).
//
// The timer is not touched per call either: once armed it is left to fire
// (a call's deadline is never earlier than the time it was armed for,
// since every call gets the same timeout), and when it fires it re-arms
// for the head, if any. A runtime timer set and stopped for every call
// costs about 2 % of an in-memory call's latency; this costs nothing.
type calls struct {
	mu      sync.Mutex
	head    *callCtx
	tail    *callCtx
	timer   *clock.Timer // armed when timerAt is set
	timerAt time.Time    // when the armed timer fires; zero: not armed
	closed  bool         // the generation shut down: no new calls

	freeMu sync.Mutex      // guards free; taken after a callCtx's mu, never before
	free   []chan struct{} // open Done channels of calls that ended uncancelled
}

// maxFree bounds the free list: about as many channels as calls run at
// once, beyond which a channel is left to the garbage collector.
const maxFree = 64

func (c *calls) getChan() chan struct{} {
	c.freeMu.Lock()
	defer c.freeMu.Unlock()
	if n := len(c.free); n > 0 {
		ch := c.free[n-1]
		c.free = c.free[:n-1]
		return ch
	}
	return make(chan struct{})
}

func (c *calls) putChan(ch chan struct{}) {
	c.freeMu.Lock()
	defer c.freeMu.Unlock()
	if len(c.free) < maxFree {
		c.free = append(c.free, ch)
	}
}

// start registers a call and returns its context, derived from ctx, which
// the caller passes to end. ok is false when the generation is shutting
// down. The call's deadline is timeout after since, or after now when
// since is zero; a call with an earlier since (it waited for a slot) may
// end before calls started earlier, and is put in its place.
func (c *calls) start(ctx context.Context, clk clock.Clock, timeout time.Duration, since time.Time) (_ *callCtx, ok bool) {
	now := clk.Now()
	if since.IsZero() {
		since = now
	}
	n := &callCtx{parent: ctx, calls: c, deadline: since.Add(timeout)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false
	}
	c.insert(n)
	wait := n.deadline.Sub(now)
	switch {
	case c.timer == nil:
		c.timer = clk.AfterFunc(wait, func() { c.expire(clk) })
		c.timerAt = n.deadline
	case c.timerAt.IsZero() || c.timerAt.After(n.deadline):
		c.timer.Reset(wait)
		c.timerAt = n.deadline
	}
	c.mu.Unlock()
	return n, true
}

// insert puts n in the list in deadline order: at the tail, unless it
// waited for a slot and ends before calls started earlier.
func (c *calls) insert(n *callCtx) {
	at := c.tail
	for at != nil && at.deadline.After(n.deadline) {
		at = at.prev
	}
	switch {
	case at == nil && c.head == nil:
		c.head, c.tail = n, n
	case at == nil:
		n.next, c.head.prev, c.head = c.head, n, n
	case at == c.tail:
		n.prev, c.tail.next, c.tail = c.tail, n, n
	default:
		n.prev, n.next = at, at.next
		at.next.prev, at.next = n, n
	}
}

// end removes a finished call. The timer is left as it is: when it fires
// it re-arms for the new head, which is cheaper than re-arming on every
// end.
func (c *calls) end(n *callCtx) {
	c.mu.Lock()
	c.unlink(n)
	c.mu.Unlock()
	n.finish()
}

func (c *calls) unlink(n *callCtx) {
	if n.prev == nil && c.head != n {
		return // already removed
	}
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		c.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		c.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// expire cancels the calls past their deadline and re-arms the timer for
// the next one.
func (c *calls) expire(clk clock.Clock) {
	now := clk.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timerAt = time.Time{}
	for c.head != nil && !c.head.deadline.After(now) {
		n := c.head
		c.unlink(n)
		n.cancel(byTimeout, context.DeadlineExceeded)
	}
	if c.head != nil && !c.closed {
		c.timer.Reset(c.head.deadline.Sub(now))
		c.timerAt = c.head.deadline
	}
}

// close refuses new calls and stops the timer. With cancel it also
// retires every in-flight call; without, the calls stay until they end by
// themselves (the session ended and the SDK retires them), since cancelling
// would race a reply that did arrive. A call between the rounds of a
// multi round-trip request (its host is answering the server's input
// requests, see enterRound) waits for no reply, and no SDK would retire
// it: it is retired either way. A call whose CallTimeout has run out by
// now is retired as timed out, as its timer, due at the same instant,
// would have done (which of the two runs first is chance).
func (c *calls) close(cancel bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for n := c.head; n != nil; {
		next := n.next
		if cancel || n.rounds > 0 {
			c.unlink(n)
			if n.deadline.After(now) {
				n.cancel(byShutdown, context.Canceled)
			} else {
				n.cancel(byTimeout, context.DeadlineExceeded)
			}
		}
		n = next
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timerAt = time.Time{}
	}
}

// callCtx is the context of one in-flight call, and its node in the
// generation's list of calls (see calls). It carries the caller's values
// and cancellation, and adds the conn's own: CallTimeout and the
// generation's shutdown. One allocation per call pays for all of it, where
// context.WithCancel and a separate list node cost three, plus the lazily
// made Done channel.
//
// The Done channel comes from the generation's free list: a call that ends
// without being cancelled returns its channel there, since nothing closed
// it. (A sync.Pool would lose its channels at every garbage collection,
// and a call of a few hundred kilobytes of JSON sees many.) The SDK
// reads Done only while the call runs. After the call has ended the
// context counts as cancelled (Err returns context.Canceled and Done a
// closed channel), as the context of context.WithCancel would after its
// deferred cancel; code that kept the Done channel of a finished call past
// its end, which the SDK does not do, would not see it closed.
type callCtx struct {
	parent   context.Context
	calls    *calls
	deadline time.Time // CallTimeout after the start, on the supervisor's clock

	// Guarded by the calls' mutex.
	prev, next *callCtx
	rounds     int // host handlers answering the server's input requests (enterRound)

	mu     sync.Mutex
	done   chan struct{} // nil until Done is first called
	err    error         // set when cancelled
	reason cancelReason
	ended  bool         // the call returned: nothing may close done any more
	stop   func() bool  // stops the propagation of the parent's cancellation
	afters []*afterFunc // registered by AfterFunc (children of this context)
}

// closedChan is the Done channel of a call that has ended.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

type cancelReason uint8

type afterFunc struct {
	f    func()
	once sync.Once
}

// Deadline is the caller's. CallTimeout's is on the supervisor's clock,
// which may be a test's fake one, so it is enforced by cancellation alone
// (as it was with context.WithCancel) and not reported to code that would
// compare it with the real time.
func (x *callCtx) Deadline() (time.Time, bool) { return x.parent.Deadline() }

// Done returns the call's channel, made on first use. When the caller's
// context can be cancelled, its cancellation is propagated from then on.
func (x *callCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done != nil {
		return x.done
	}
	if x.err != nil || x.ended {
		return closedChan
	}
	if x.parent.Done() != nil {
		if err := x.parent.Err(); err != nil {
			x.cancelLocked(byParent, err)
			return closedChan
		}
		x.done = make(chan struct{}) // never recycled: the parent's AfterFunc may close it
		x.watchParentLocked()
		return x.done
	}
	x.done = x.calls.getChan()
	return x.done
}

// Err reports the call's own cancellation, else the caller's.
func (x *callCtx) Err() error {
	x.mu.Lock()
	err, watching := x.err, x.stop != nil
	x.mu.Unlock()
	if err != nil || watching {
		// While the parent's cancellation is being propagated, Err follows
		// Done: it is not set before Done is closed.
		return err
	}
	return x.parent.Err()
}

// Value returns the caller's values, and the call itself under
// callCtxKey. (context.Cause of a call's context is its Err, or the
// caller's cause once the caller's context has ended.)
func (x *callCtx) Value(key any) any {
	if _, ok := key.(callCtxKey); ok {
		return x
	}
	return x.parent.Value(key)
}

// callCtxKey finds a call's callCtx in a context derived from it.
type callCtxKey struct{}

// enterRound records that a host handler answers an input request of
// the server (an input_required result, SEP-2322) for the call whose
// context ctx is or derives from, and returns its exit. On protocol
// 2026-07-28 the SDK runs the handlers between two requests of the call,
// so no reply is awaited that a lost session would end: the generation's
// shutdown retires such a call itself (calls.close). ok is false when
// the generation is shutting down already. A request the server sends
// during a call (the classic protocol) has a context of its own, which
// the SDK cancels when the session ends: it is not tracked.
//
// exit takes the handler's error and returns the one to give the SDK: a
// handler that failed because the shutdown retired its call failed
// because the connection is gone (mcp.ErrConnectionClosed), which is how
// the call then ends (see generation.request).
func enterRound(ctx context.Context) (exit func(error) error, ok bool) {
	n, _ := ctx.Value(callCtxKey{}).(*callCtx)
	if n == nil {
		return func(err error) error { return err }, true
	}
	c := n.calls
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false
	}
	n.rounds++
	return func(err error) error {
		c.mu.Lock()
		n.rounds--
		c.mu.Unlock()
		if err != nil && n.retired() {
			return fmt.Errorf("the session ended while the host answered the server's input request: %w", mcp.ErrConnectionClosed)
		}
		return err
	}, true
}

// AfterFunc arranges for f to run in its own goroutine once the call is
// cancelled, so that a context derived from the call's needs no goroutine
// to watch it (context.AfterFunc and context.WithCancel use this method).
func (x *callCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	x.mu.Lock()
	if x.err != nil || x.ended {
		x.mu.Unlock()
		a.once.Do(func() { go f() })
		return func() bool { return false }
	}
	if x.parent.Done() != nil {
		x.watchParentLocked()
	}
	x.afters = append(x.afters, a)
	x.mu.Unlock()
	return func() bool {
		stopped := false
		a.once.Do(func() { stopped = true })
		return stopped
	}
}

// watchParentLocked propagates the caller's cancellation, once.
func (x *callCtx) watchParentLocked() {
	if x.stop == nil {
		x.stop = context.AfterFunc(x.parent, func() { x.cancel(byParent, x.parent.Err()) })
	}
}

func (x *callCtx) String() string { return "conn.callContext" }

// cancel ends the call's context for reason, with err as its Err, unless
// it was cancelled or ended already.
func (x *callCtx) cancel(reason cancelReason, err error) {
	x.mu.Lock()
	x.cancelLocked(reason, err)
	x.mu.Unlock()
}

func (x *callCtx) cancelLocked(reason cancelReason, err error) {
	if x.err != nil || x.ended {
		return
	}
	x.err, x.reason = err, reason
	if x.done != nil {
		close(x.done)
	}
	x.runAfters()
}

func (x *callCtx) runAfters() {
	for _, a := range x.afters {
		a.once.Do(func() { go a.f() })
	}
	x.afters = nil
}

// finish marks the call as returned. An unused channel goes back to the
// pool; a context that was derived from the call's and is still waiting is
// cancelled, as the deferred cancel of context.WithCancel would.
func (x *callCtx) finish() {
	x.mu.Lock()
	if x.ended {
		x.mu.Unlock()
		return
	}
	var recycle chan struct{}
	if x.err == nil {
		x.err = context.Canceled
		x.runAfters()
		if x.stop == nil {
			recycle = x.done
		} else if x.done != nil {
			close(x.done)
		}
	}
	x.ended = true
	x.done = nil
	stop := x.stop
	x.mu.Unlock()
	if stop != nil {
		stop()
	}
	if recycle != nil {
		x.calls.putChan(recycle)
	}
}

// retired reports whether the generation's shutdown cancelled the call.
func (x *callCtx) retired() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.reason == byShutdown
}

// expired reports whether CallTimeout cancelled the call.
func (x *callCtx) expired() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.reason == byTimeout
}

const (
	notCancelled cancelReason = iota
	byTimeout                 // CallTimeout expired
	byShutdown                // the generation was shut down
	byParent                  // the caller's context ended
)

// listCatalog is phase one of a catalog sync: list what the server
// advertises, every page, or fail and change nothing.
func (g *generation) listCatalog(ctx context.Context) (*serverCatalog, error) {
	s := g.sup
	caps := g.sess.InitializeResult().Capabilities
	cat := &serverCatalog{}
	if caps != nil && caps.Resources != nil {
		var err error
		if cat.resources, err = listAll(ctx, "resources", g.sess.Resources(ctx, nil), func(r *mcp.Resource) (Resource, string) {
			return Resource{Server: s.cfg.Name, Raw: r, sup: s}, r.URI
		}); err != nil {
			return nil, err
		}
		if cat.templates, err = listAll(ctx, "resource templates", g.sess.ResourceTemplates(ctx, nil), func(r *mcp.ResourceTemplate) (ResourceTemplate, string) {
			return ResourceTemplate{Server: s.cfg.Name, Raw: r}, r.URITemplate
		}); err != nil {
			return nil, err
		}
	}
	if caps != nil && caps.Prompts != nil {
		var err error
		if cat.prompts, err = listAll(ctx, "prompts", g.sess.Prompts(ctx, nil), func(p *mcp.Prompt) (Prompt, string) {
			return Prompt{Name: PublicToolName(s.cfg.Name, p.Name), Server: s.cfg.Name, Raw: p, sup: s}, p.Name
		}); err != nil {
			return nil, err
		}
		if s.cfg.Filter != nil {
			cat.prompts = slices.DeleteFunc(cat.prompts, func(p Prompt) bool { return !s.cfg.Filter(p.Raw.Name) })
		}
		slices.SortFunc(cat.prompts, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
		for i := 1; i < len(cat.prompts); i++ {
			if cat.prompts[i].Name == cat.prompts[i-1].Name {
				return nil, fmt.Errorf("list prompts: prompts %q and %q share the public name %q",
					cat.prompts[i-1].Raw.Name, cat.prompts[i].Raw.Name, cat.prompts[i].Name)
			}
		}
	}
	return cat, nil
}

// catalogChanged handles a resources or prompts list_changed of g: the
// established generation re-lists now (one listing at a time; a storm
// costs at most one more), a generation still connecting re-lists once it
// is established.
func (g *generation) catalogChanged() {
	s := g.sup
	if s.cfg.Catalog == nil {
		return
	}
	if !g.ext.changed() {
		return
	}
	// The generation's goroutine counts as a worker until its session has
	// ended, and the session cannot end while this handler runs: adding
	// one here never races the disposal's wait.
	s.workers.Add(1)
	go g.resyncCatalog()
}

func (g *generation) resyncCatalog() {
	s := g.sup
	defer s.workers.Done()
	for {
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
		cat, err := g.listCatalog(ctx)
		cancel()
		if err != nil {
			err = redact.Error(err)
			if !g.down() {
				s.cfg.Logger.Error("catalog re-sync failed: "+err.Error()+"; the previous resources and prompts stay listed",
					"server", s.cfg.Name, "generation", g.id, "err", err)
			}
		} else {
			s.pub.publishCatalogIf(cat, func() bool { return s.ext.live.Load() == g && !g.down() })
		}
		if !g.ext.again(g.down) {
			return
		}
	}
}
