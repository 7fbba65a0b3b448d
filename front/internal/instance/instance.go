// Package instance runs a server's instance for one client of a proxy:
// a supervisor started on the client's first request to the server and
// closed when the client ends or after an idle time without a request.
// Its life is a declared machine ([Spec]); the supervisor's own
// connection machine (conn.Table) runs inside the running state.
package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm"
)

// State is a state of an instance.
type State string

// Event is an event of an instance.
type Event string

// The states and events of [Spec].
const (
	Absent  State = "absent"
	Running State = "running"
	Idle    State = "idle"
	Ended   State = "ended"

	Use    Event = "use"
	Expire Event = "expire"
	Closed Event = "closed"
	End    Event = "end"
)

// useData is the data of a use: whether it started the supervisor.
type useData struct{ started bool }

// Spec declares the life of a server's instance for one client.
func Spec() fsm.Spec[State, Event, useData] {
	type tr = fsm.Transition[State, Event, useData]
	started := func(d useData) bool { return d.started }
	return fsm.Spec[State, Event, useData]{
		Name:    "per-client instance",
		Initial: Absent,
		States: []fsm.State[State]{
			{Name: Absent, Doc: "The client has not used the server yet: it is served the shared instance's listing."},
			{Name: Running, Doc: "The client's own supervisor runs; its connection machine says how the server is."},
			{Name: Idle, Doc: "Closed after the idle time without a request, or by a reload; the next request starts it again."},
			{Name: Ended, Doc: "The client ended (its session closed, was deleted or expired): the instance is closed for good.", Terminal: true},
		},
		Events: []fsm.Event[Event]{
			{Name: Use, Doc: "A request of the client needs the server."},
			{Name: Expire, Doc: "No request of the client reached the server for the idle time."},
			{Name: Closed, Doc: "The supervisor was closed from outside: a reload changed or removed the server."},
			{Name: End, Doc: "The client ended."},
		},
		Transitions: []tr{
			{Event: Use, From: []State{Absent, Idle}, To: Running, Guard: started, When: "started"},
			{Event: Use, From: []State{Absent}, To: Absent},
			{Event: Use, From: []State{Idle}, To: Idle},
			{Event: Expire, From: []State{Running}, To: Idle},
			{Event: Closed, From: []State{Running}, To: Idle},
			{Event: End, From: []State{Absent, Running, Idle}, To: Ended},
		},
	}
}

var machines = sync.OnceValue(func() *fsm.Compiled[State, Event, useData] {
	c, err := fsm.Compile(Spec())
	if err != nil {
		panic(err) // the spec is a constant: a test compiles it
	}
	return c
})

// ErrEnded: the client ended while its request waited for the instance.
var ErrEnded = errors.New("the client's session ended")

// Options configure an [Instance].
type Options struct {
	// Server names the server, for the logs.
	Server string
	// Clock times the idle close. Nil means the real clock.
	Clock clock.Clock
	// Idle closes the instance after that long without a request;
	// negative never. Zero means 10 minutes.
	Idle time.Duration
	// Logger receives the instance's logs: why it closed. Give it what
	// names the instance's client. Nil discards them.
	Logger *slog.Logger
	// Start starts the supervisor, with observe as (or called from) its
	// conn.Config.OnTransition, and returns the function that frees its
	// slot once it has closed.
	Start func(ctx context.Context, observe func(conn.Transition)) (sup *conn.Supervisor, release func(), err error)
	// Established, if set, is called at every transition of the
	// supervisor into established; first says whether it is the first
	// since it started (the client may now be served its own listing).
	// It runs on the supervisor's loop: it must not block.
	Established func(first bool)
	// Go runs a close of the supervisor off the caller's goroutine; its
	// owner waits for what it runs. Nil means a goroutine of its own.
	Go func(func())
	// Dropped, if set, runs after a supervisor closed and its slot was
	// freed.
	Dropped func()
	// Kind names the instance in its logs. Empty means "per-client
	// instance".
	Kind string
	// EndReason is why [Instance.End] closes it, in its logs. Empty
	// means "its client ended".
	EndReason string
}

// Instance is one server's instance for one client. Create it with
// [New].
type Instance struct {
	o Options
	m *fsm.Machine[State, Event, useData]

	mu      sync.Mutex // guards what follows, and every event of m
	sup     *conn.Supervisor
	release func()
	busy    int // requests using it now
	idle    *clock.Timer
	idleSeq uint64 // which arming of idle is current
	listed  bool   // its supervisor was established since it started
}

// New returns an absent instance.
func New(o Options) (*Instance, error) {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Idle == 0 {
		o.Idle = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Go == nil {
		o.Go = func(f func()) { go f() }
	}
	if o.Kind == "" {
		o.Kind = "per-client instance"
	}
	if o.EndReason == "" {
		o.EndReason = "its client ended"
	}
	m, err := machines().New(fsm.Options[State, Event, useData]{OnError: func(Event, error) {}})
	if err != nil {
		return nil, err
	}
	return &Instance{o: o, m: m}, nil
}

// fire fires ev; in.mu is held.
func (in *Instance) fire(ev Event, d useData) {
	if err := in.m.FireWith(context.Background(), ev, d); err != nil {
		in.o.Logger.Debug("instance: "+err.Error(), "server", in.o.Server)
	}
}

// State is the instance's state now.
func (in *Instance) State() State {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.m.State()
}

// Use makes the instance run, if it does not (started then says so),
// and holds it for one request until done is called.
func (in *Instance) Use(ctx context.Context) (sup *conn.Supervisor, started bool, done func(), err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m.State() == Ended {
		return nil, false, nil, ErrEnded
	}
	if in.m.State() == Running && in.sup.State() == conn.Disposed {
		// Its slot is free now, before this request's start takes one:
		// drop frees it off this goroutine, after this start, which
		// found the bound reached or not as the goroutines ran.
		release := in.release
		in.release = func() {}
		release()
		in.fire(Closed, useData{})
		in.drop("its supervisor was closed from outside (a reload changed or removed the server); this request starts a new one")
	}
	if in.m.State() != Running {
		sup, release, err := in.o.Start(ctx, in.observe)
		in.fire(Use, useData{started: err == nil})
		if err != nil {
			return nil, false, nil, err
		}
		in.sup, in.release, in.listed = sup, release, false
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

// observe takes note of a transition of the supervisor.
func (in *Instance) observe(t conn.Transition) {
	if t.To != conn.Established {
		return
	}
	in.mu.Lock()
	first := !in.listed
	in.listed = true
	in.mu.Unlock()
	if in.o.Established != nil {
		in.o.Established(first)
	}
}

// Listing reports whether the instance's supervisor runs and was
// established since it started: the client may be served its listing.
func (in *Instance) Listing() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.m.State() == Running && in.listed
}

// Running is the instance's supervisor when it runs, or nil.
func (in *Instance) Running() *conn.Supervisor {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m.State() != Running {
		return nil
	}
	return in.sup
}

// done ends one request's hold; the last one arms the idle timer.
func (in *Instance) done() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.busy--
	if in.busy > 0 || in.o.Idle < 0 || in.m.State() != Running {
		return
	}
	in.idleSeq++
	seq := in.idleSeq
	in.idle = in.o.Clock.AfterFunc(in.o.Idle, func() { in.expire(seq) })
}

// expire closes the instance after its idle time, unless a request came
// since the timer was armed.
func (in *Instance) expire(seq uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if seq != in.idleSeq || in.busy > 0 || in.m.State() != Running {
		return
	}
	in.fire(Expire, useData{})
	in.drop(fmt.Sprintf("no request of its client for %v (the instance idle time)", in.o.Idle))
}

// End closes the instance for good: its client ended (Options.EndReason).
func (in *Instance) End() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m.State() == Ended {
		return
	}
	in.fire(End, useData{})
	in.drop(in.o.EndReason)
}

// drop closes the supervisor, off the caller's goroutine, and frees its
// slot once it is closed; in.mu is held. It logs why: at warning level
// when requests of the client still use the instance (its client is
// active), so that their failure explains itself.
func (in *Instance) drop(why string) {
	sup, release := in.sup, in.release
	if sup != nil {
		level := slog.LevelInfo
		if in.busy > 0 {
			level = slog.LevelWarn
		}
		in.o.Logger.Log(context.Background(), level, in.o.Kind+" closed: "+why,
			"server", in.o.Server, "requests", in.busy)
	}
	in.sup, in.release, in.listed = nil, nil, false
	in.idleSeq++
	if in.idle != nil {
		in.idle.Stop()
		in.idle = nil
	}
	if sup == nil {
		return
	}
	in.o.Go(func() {
		if err := sup.Close(context.Background()); err != nil && !errors.Is(err, conn.ErrClosed) {
			in.o.Logger.Warn(in.o.Kind+" not closed cleanly: "+err.Error(), "server", in.o.Server)
		}
		release()
		if in.o.Dropped != nil {
			in.o.Dropped()
		}
	})
}
