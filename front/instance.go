package front

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server isolated per client gets, for each client of the HTTP front,
// an instance of its own: a supervisor started on the client's first
// request to the server and closed when the client ends or after
// Options.InstanceIdle without a request. Its life is the instance
// machine, instanceSpec; the supervisor's own connection machine
// (conn.Table) runs inside the running state.

// instanceState is a state of a per-client instance.
type instanceState string

// instanceEvent is an event of a per-client instance.
type instanceEvent string

// The states and events of instanceSpec.
const (
	instanceAbsent  instanceState = "absent"
	instanceRunning instanceState = "running"
	instanceIdle    instanceState = "idle"
	instanceEnded   instanceState = "ended"

	instanceUse    instanceEvent = "use"
	instanceExpire instanceEvent = "expire"
	instanceClosed instanceEvent = "closed"
	instanceEnd    instanceEvent = "end"
)

// instanceUse is the data of a use: whether it started the supervisor.
type instanceUseData struct{ started bool }

// instanceSpec declares the life of a server's instance for one client.
func instanceSpec() fsm.Spec[instanceState, instanceEvent, instanceUseData] {
	type tr = fsm.Transition[instanceState, instanceEvent, instanceUseData]
	started := func(d instanceUseData) bool { return d.started }
	return fsm.Spec[instanceState, instanceEvent, instanceUseData]{
		Name:    "per-client instance",
		Initial: instanceAbsent,
		States: []fsm.State[instanceState]{
			{Name: instanceAbsent, Doc: "The client has not used the server yet: it is served the shared instance's listing."},
			{Name: instanceRunning, Doc: "The client's own supervisor runs; its connection machine says how the server is."},
			{Name: instanceIdle, Doc: "Closed after the idle time without a request, or by a reload; the next request starts it again."},
			{Name: instanceEnded, Doc: "The client ended (its session closed, was deleted or expired): the instance is closed for good.", Terminal: true},
		},
		Events: []fsm.Event[instanceEvent]{
			{Name: instanceUse, Doc: "A request of the client needs the server."},
			{Name: instanceExpire, Doc: "No request of the client reached the server for the idle time."},
			{Name: instanceClosed, Doc: "The supervisor was closed from outside: a reload changed or removed the server."},
			{Name: instanceEnd, Doc: "The client ended."},
		},
		Transitions: []tr{
			{Event: instanceUse, From: []instanceState{instanceAbsent, instanceIdle}, To: instanceRunning, Guard: started, When: "started"},
			{Event: instanceUse, From: []instanceState{instanceAbsent}, To: instanceAbsent},
			{Event: instanceUse, From: []instanceState{instanceIdle}, To: instanceIdle},
			{Event: instanceExpire, From: []instanceState{instanceRunning}, To: instanceIdle},
			{Event: instanceClosed, From: []instanceState{instanceRunning}, To: instanceIdle},
			{Event: instanceEnd, From: []instanceState{instanceAbsent, instanceRunning, instanceIdle}, To: instanceEnded},
		},
	}
}

var instanceMachines = sync.OnceValue(func() *fsm.Compiled[instanceState, instanceEvent, instanceUseData] {
	c, err := fsm.Compile(instanceSpec())
	if err != nil {
		panic(err) // the spec is a constant: a test compiles it
	}
	return c
})

// instanceOptions are an instance's machine's: no callbacks, since the
// front fires every event itself and logs what matters.
func instanceOptions() fsm.Options[instanceState, instanceEvent, instanceUseData] {
	return fsm.Options[instanceState, instanceEvent, instanceUseData]{OnError: func(instanceEvent, error) {}}
}

// errInstanceEnded: the client ended while its request waited for an
// instance.
var errInstanceEnded = errors.New("the client's session ended")

// instance is one server's instance for one client.
type instance struct {
	c      *client
	server string
	m      *fsm.Machine[instanceState, instanceEvent, instanceUseData]

	mu      sync.Mutex // guards what follows, and every event of m
	sup     *conn.Supervisor
	release func() // frees the server's instance slot
	busy    int    // requests using it now
	idle    *clock.Timer
	idleSeq uint64 // which arming of idle is current
	listed  bool   // its supervisor was established since it started
	// rootsAt is when the server's roots/list was last answered: a
	// server that asks for roots as it starts applies them after its
	// answer, and the request that started it waits for that (settle).
	rootsAt time.Time
}

// rootsSettle is how long after a starting server's roots/list was
// answered the request that started it waits before it is sent: the
// time a server such as server-filesystem takes to apply the roots it
// was given (it checks each directory), which a request sent sooner
// finds without them.
const rootsSettle = 200 * time.Millisecond

// rootsAnswered takes note that server's instance of c's answered a
// roots/list now.
func (c *client) rootsAnswered(server string) {
	c.mu.Lock()
	in := c.instances[server]
	c.mu.Unlock()
	if in == nil {
		return
	}
	in.mu.Lock()
	in.rootsAt = in.c.f.opts.Clock.Now()
	in.mu.Unlock()
}

// settle waits, for a request that started the instance, until a
// roots/list its server sent as it started has had rootsSettle to take
// effect, or ctx ends.
func (in *instance) settle(ctx context.Context) {
	in.mu.Lock()
	at := in.rootsAt
	in.mu.Unlock()
	if at.IsZero() {
		return
	}
	clk := in.c.f.opts.Clock
	wait := rootsSettle - clk.Since(at)
	if wait <= 0 {
		return
	}
	timer := clk.Timer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// instanceOf is c's instance of server, made absent on first use.
func (c *client) instanceOf(server string) (*instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errInstanceEnded
	}
	in := c.instances[server]
	if in == nil {
		m, err := instanceMachines().New(instanceOptions())
		if err != nil {
			return nil, err
		}
		in = &instance{c: c, server: server, m: m}
		c.instances[server] = in
	}
	return in, nil
}

// fire fires ev; in.mu is held.
func (in *instance) fire(ev instanceEvent, d instanceUseData) {
	if err := in.m.FireWith(context.Background(), ev, d); err != nil {
		in.c.f.opts.Logger.Debug("instance: "+err.Error(), "server", in.server)
	}
}

// use makes the instance run, if it does not, and holds it for one
// request until done is called.
func (in *instance) use(ctx context.Context) (sup *conn.Supervisor, started bool, done func(), err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m.State() == instanceEnded {
		return nil, false, nil, errInstanceEnded
	}
	if in.m.State() == instanceRunning && in.sup.State() == conn.Disposed {
		in.fire(instanceClosed, instanceUseData{})
		in.drop()
	}
	if in.m.State() != instanceRunning {
		err := in.start(ctx)
		in.fire(instanceUse, instanceUseData{started: err == nil})
		if err != nil {
			return nil, false, nil, err
		}
		started = true
	}
	in.busy++
	in.idleSeq++ // a timer armed before is stale
	if in.idle != nil {
		in.idle.Stop()
		in.idle = nil
	}
	var once sync.Once
	return in.sup, started, func() { once.Do(in.done) }, nil
}

// start starts the supervisor; in.mu is held.
func (in *instance) start(ctx context.Context) error {
	f := in.c.f
	iso := f.isolation(in.server)
	release, err := f.slots.Instance(in.server, iso.maxInstances)
	if err != nil {
		return err
	}
	sup, err := f.opts.Backends.StartInstance(ctx, in.server, in.configure)
	if err != nil {
		release()
		return fmt.Errorf("server %q: its instance for this client did not start: %w", in.server, err)
	}
	in.sup, in.release, in.listed, in.rootsAt = sup, release, false, time.Time{}
	return nil
}

// configure sets what of the instance's conn.Config is the client's.
func (in *instance) configure(c *conn.Config) {
	cl := in.c
	c.Registry, c.Catalog = cl.reg, cl.cat
	c.Client, c.ClientMiddleware = cl.clientOptions(in.server), cl.clientMiddleware(in.server)
	c.FailOnStartupError = false // Start must not wait: the request does, by its own deadline
	if tr := cl.f.opts.Tracer; tr != nil {
		c.Propagate = tr.Propagate
	}
	if roots, ok := cl.knownRoots(); ok {
		c.Roots = roots
	}
	next := c.OnTransition
	c.OnTransition = func(t conn.Transition) {
		if next != nil {
			next(t)
		}
		in.observe(t)
	}
}

// observe takes note of a transition of the instance's supervisor: its
// first established one makes the client see its own listing.
func (in *instance) observe(t conn.Transition) {
	if t.To != conn.Established {
		return
	}
	in.mu.Lock()
	first := !in.listed
	in.listed = true
	in.mu.Unlock()
	cl := in.c
	cl.sendLevel(in.server)
	if first {
		cl.watchOwn()
	}
}

// listing reports whether the client is served the instance's own
// listing: its supervisor runs and was established since it started.
func (in *instance) listing() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.m.State() == instanceRunning && in.listed
}

// running is the instance's supervisor when it runs.
func (in *instance) running() *conn.Supervisor {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m.State() != instanceRunning {
		return nil
	}
	return in.sup
}

// done ends one request's hold; the last one arms the idle timer.
func (in *instance) done() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.busy--
	idle := in.c.f.opts.InstanceIdle
	if in.busy > 0 || idle < 0 || in.m.State() != instanceRunning {
		return
	}
	in.idleSeq++
	seq := in.idleSeq
	in.idle = in.c.f.opts.Clock.AfterFunc(idle, func() { in.expire(seq) })
}

// expire closes the instance after its idle time, unless a request came
// since the timer was armed.
func (in *instance) expire(seq uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if seq != in.idleSeq || in.busy > 0 || in.m.State() != instanceRunning {
		return
	}
	in.fire(instanceExpire, instanceUseData{})
	in.drop()
	in.c.f.opts.Logger.Debug("per-client instance closed: idle", "server", in.server)
}

// end closes the instance for good: its client ended.
func (in *instance) end() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m.State() == instanceEnded {
		return
	}
	in.fire(instanceEnd, instanceUseData{})
	in.drop()
}

// drop closes the supervisor, off the caller's goroutine, and frees its
// slot once it is closed; in.mu is held.
func (in *instance) drop() {
	sup, release := in.sup, in.release
	in.sup, in.release, in.listed = nil, nil, false
	in.idleSeq++
	if in.idle != nil {
		in.idle.Stop()
		in.idle = nil
	}
	if sup == nil {
		return
	}
	cl := in.c
	cl.f.wg.Go(func() {
		if err := sup.Close(context.Background()); err != nil && !errors.Is(err, conn.ErrClosed) {
			cl.f.opts.Logger.Warn("per-client instance not closed cleanly: "+cl.f.opts.Redact(err.Error()), "server", in.server)
		}
		release()
		cl.update() // the client sees the shared listing again
	})
}

// knownRoots are c's roots, if they were read.
//
//lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still served.
func (c *client) knownRoots() ([]*mcp.Root, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.rootsSeen {
		return nil, false
	}
	return cloneRoots(c.roots), true
}
