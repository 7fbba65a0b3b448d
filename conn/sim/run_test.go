//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still served; the simulator sets them.

package sim

import (
	"context"
	"fmt"
	"hash"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName is the Config.Name of every supervisor of a run.
const ServerName = "sim"

// Options tune a run.
type Options struct {
	// Log, if set, receives every line of the run's log as it happens.
	Log func(string)
	// Tail is how many of the last lines of the log a Result keeps; zero
	// means 50.
	Tail int
	// Wire also logs every message between the supervisor and a process.
	Wire bool
}

// Result is what a run found.
type Result struct {
	Schedule  Schedule
	Violation *Violation    // the first invariant broken; nil when every one held
	Tail      []string      // the last lines of the run's log
	Moves     []Move        // every transition of every supervisor, for the trace
	Took      time.Duration // the simulated time the run lasted
	Procs     int           // processes started
	Calls     int           // host requests made
	// Digest is a hash of the run's whole log in its canonical order
	// (see [Canonical]): two runs of one schedule with the same Digest
	// happened alike, event for event and instant for instant.
	Digest uint64
}

// Violation is an invariant a run broke, and when it noticed.
type Violation struct {
	Invariant string
	Err       error
	Step      int           // the step after which it was found; len(Steps)+1 at the end of the run
	At        time.Duration // simulated time since the start
}

// String words the violation: the invariant, when it was found, what broke it.
func (v *Violation) String() string {
	return fmt.Sprintf("invariant %s broken (found after step %d, at +%v): %v", v.Invariant, v.Step, v.At, v.Err)
}

// Run runs s in a testing/synctest bubble of t: simulated time, a
// simulated server over conn's transport seam, and the host's steps, with
// every invariant checked after every step. It returns when the run has
// closed everything it started. It does not fail t: the caller judges the
// result.
func Run(t *testing.T, s Schedule, opts Options) *Result {
	var res *Result
	synctest.Test(t, func(*testing.T) { res = runBubble(s, opts) })
	return res
}

// run is one run in progress, inside its bubble.
type run struct {
	sched Schedule
	opts  Options
	t0    time.Time
	w     *world
	ag    *agenda
	reg   *conn.ToolRegistry
	cat   *conn.Catalog

	mu      sync.Mutex // guards h, tail, digest, instant, the Calls' fields
	h       History
	tail    []string
	digest  hash.Hash64
	instant instantLines // the lines of the latest instant, not yet in digest
	seq     int

	// The driver's (the bubble's root goroutine).
	inc   int
	sup   *conn.Supervisor
	setup Setup
	clk   *watchedClock
	kept  map[string]keptTool // the tool last looked up by each call, for call-kept
	host  sync.WaitGroup
}

func runBubble(s Schedule, opts Options) *Result {
	if opts.Tail == 0 {
		opts.Tail = 50
	}
	r := &run{sched: s, opts: opts, t0: time.Now(), reg: conn.NewRegistry(), cat: conn.NewCatalog(), kept: map[string]keptTool{}, digest: fnv.New64a()}
	r.w = newWorld(r)
	r.ag = newAgenda()
	r.startSup(s.Setup, "start")
	var v *Violation
	for i, st := range s.Steps {
		r.sleep(st.After) // with 0, what the world armed for now runs first
		r.logf("step %d: %v", i+1, st)
		r.do(st)
		r.sleep(0)
		if v = r.check(i+1, false); v != nil {
			break
		}
	}
	if v == nil && !s.Abrupt {
		r.calm(true)
		v = r.check(len(s.Steps)+1, false)
	}
	r.closeSup("end")
	r.w.teardown()
	done := make(chan struct{})
	go func() {
		r.host.Wait()
		close(done)
	}()
	r.until(time.Now().Add(24*time.Hour), done)
	select {
	case <-done:
	default:
		r.record(func(h *History) { h.Leaks = append(h.Leaks, "a request of the host never returned") })
	}
	// Every timer still armed fires; a supervisor's, after its Close
	// returned nil, is a leak (watchedClock).
	r.sleep(24 * time.Hour)
	if leaks := bubbleLeaks(); len(leaks) > 0 {
		r.record(func(h *History) { h.Leaks = append(h.Leaks, leaks...) })
	}
	if fv := r.check(len(s.Steps)+1, true); v == nil {
		v = fv
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.instant.flush(r.digest)
	return &Result{Schedule: s, Violation: v, Tail: slices.Clone(r.tail), Moves: slices.Clone(r.h.Transitions),
		Took: r.now(), Procs: len(r.h.Opens), Calls: len(r.h.Calls), Digest: r.digest.Sum64()}
}

func (r *run) now() time.Duration { return time.Since(r.t0) }

// record changes the history under the run's lock.
func (r *run) record(f func(h *History)) {
	r.mu.Lock()
	f(&r.h)
	r.mu.Unlock()
}

// logf adds a line to the run's log.
func (r *run) logf(format string, args ...any) {
	at := r.now()
	line := fmt.Sprintf("%12v  ", at) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	if len(r.tail) == r.opts.Tail {
		copy(r.tail, r.tail[1:])
		r.tail = r.tail[:len(r.tail)-1]
	}
	r.tail = append(r.tail, line)
	r.instant.add(r.digest, at, line)
	r.mu.Unlock()
	if r.opts.Log != nil {
		r.opts.Log(line)
	}
}

// check runs the invariants on the history so far.
func (r *run) check(step int, final bool) *Violation {
	execs, procs := r.w.snapshot()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Now, r.h.Final, r.h.Execs, r.h.procs = r.now(), final, execs, procs
	v := check(&r.h)
	if v != nil {
		v.Step, v.At = step, r.h.Now
	}
	return v
}

// do runs one step.
func (r *run) do(st Step) {
	switch st.Do {
	case "call", "call-kept":
		r.call(st)
	case "reconnect":
		r.reconnect(st)
	case "roots":
		r.roots(st.Roots)
	case "subscribe", "unsubscribe":
		r.subscribe(st)
	case "reload":
		r.closeSup("reload")
		r.startSup(*st.Setup, "reload")
	case "add-tool", "remove-tool", "change-tool":
		r.w.change(st.Do, st.Tool)
	case "crash":
		if p := r.w.newest(); p != nil {
			p.crash("step")
		}
	case "hang":
		if p := r.w.newest(); p != nil && !r.w.isCalm() {
			p.hang(st.Work)
		}
	case "thaw":
		for _, p := range r.w.all() {
			p.thaw()
		}
	case "calm":
		r.calm(false)
	default:
		panic("sim: unknown step " + st.Do)
	}
}

// startSup starts supervisor incarnation r.inc+1 with s.
func (r *run) startSup(s Setup, why string) {
	r.inc++
	inc := r.inc
	r.setup = s
	r.record(func(h *History) { h.Setups = append(h.Setups, s) })
	r.clk = &watchedClock{Clock: clock.New(), r: r, inc: inc}
	p := policy.Policy{Enabled: !s.Disabled, InitialDelay: s.InitialDelay, MaxDelay: s.MaxDelay,
		MaxAttempts: s.MaxAttempts, ProbeInterval: s.ProbeInterval}
	var reg conn.Registry = &recorder{ToolRegistry: r.reg, r: r, inc: inc}
	if s.Plain {
		reg = plainRecorder{reg.(*recorder)}
	}
	var roots []*mcp.Root
	for _, uri := range s.Roots {
		roots = append(roots, &mcp.Root{URI: uri})
	}
	cfg := conn.Config{
		Name: ServerName, Transport: r.w.open(inc), Registry: reg, Reconnect: &p,
		FailOnStartupError: s.Strict, ConnectTimeout: s.ConnectTimeout, CallTimeout: s.CallTimeout,
		CloseTimeout: s.CloseTimeout, ProtocolVersion: s.Protocol, KeepAlive: s.KeepAlive,
		HoldCalls: s.HoldCalls, RetryIdempotent: s.RetryIdempotent && s.HoldCalls > 0,
		MaxConcurrentCalls: s.MaxConcurrentCalls, Roots: roots, Clock: r.clk,
		Logger:       slog.New(&logHandler{r: r, inc: inc}),
		Catalog:      map[bool]*conn.Catalog{true: r.cat}[s.Catalog],
		OnTransition: func(t conn.Transition) { r.transition(inc, t) },
	}
	r.logf("supervisor %d starts (%s): %v", inc, why, s)
	var sup *conn.Supervisor
	var err error
	r.block(func() { sup, err = conn.Start(context.Background(), cfg) })
	if err != nil {
		r.logf("supervisor %d did not start: %v", inc, err)
		r.sup = nil
		r.record(func(h *History) { h.Starts = append(h.Starts, StartError{At: r.now(), Inc: inc, Err: err}) })
		// A strict Start that fails leaves nothing running (unless it
		// says a process may have outlived it).
		synctest.Wait()
		var cerr error
		if s.Strict && isIncomplete(err) {
			cerr = err
			r.w.retire(inc)
		}
		r.afterClose(inc, cerr, conn.Disposed, "strict start failed")
		return
	}
	r.sup = sup
}

// closeSup closes the running supervisor, as a host does: bounded by its
// close barrier and a margin.
func (r *run) closeSup(why string) {
	if r.sup == nil {
		return
	}
	sup, inc := r.sup, r.inc
	r.sup = nil
	ctx, cancel := r.deadline(r.setup.CloseTimeout + 5*time.Second)
	var err error
	r.block(func() { err = sup.Close(ctx) })
	cancel()
	r.logf("supervisor %d closed (%s): %v", inc, why, err)
	synctest.Wait() // the loop's goroutine ends after Close returns
	if err != nil {
		r.w.retire(inc)
	}
	r.afterClose(inc, err, sup.State(), why)
}

// afterClose records what a closed supervisor left.
func (r *run) afterClose(inc int, err error, st conn.State, why string) {
	if err == nil {
		r.clk.closed.Store(true)
	}
	var tools []string
	for _, t := range r.reg.Tools() {
		if t.Server == ServerName {
			tools = append(tools, t.Name)
		}
	}
	alive := r.w.aliveOf(inc)
	listed := r.listing()
	r.record(func(h *History) {
		h.Closes = append(h.Closes, Close{At: r.now(), Inc: inc, Err: err, Alive: alive, Tools: tools, Listed: listed, State: st, Reason: why})
	})
}

// listing is what the catalog holds of the server: resource URIs and
// prompt names, sorted.
func (r *run) listing() []string {
	var out []string
	for _, res := range r.cat.Resources() {
		if res.Server == ServerName {
			out = append(out, res.Raw.URI)
		}
	}
	for _, p := range r.cat.Prompts() {
		if p.Server == ServerName {
			out = append(out, p.Raw.Name)
		}
	}
	slices.Sort(out)
	return out
}

func isIncomplete(err error) bool {
	return err != nil && (strings.Contains(err.Error(), conn.ErrIncompleteShutdown.Error()))
}

// calm ends every fault for a while: the world heals, a stopped
// supervisor is reconnected, and once it has had time to recover the run
// records what it finds. Unless final, the schedule's faults resume
// afterwards.
func (r *run) calm(final bool) {
	r.logf("the world calms")
	r.w.setCalm(true)
	r.sleep(time.Millisecond)
	if r.sup == nil {
		r.startSup(r.setup, "calm")
	}
	r.settle()
	c := Calm{At: r.now(), Inc: r.inc, Listed: r.w.listed()}
	if sup := r.sup; sup != nil {
		c.State = sup.State()
		c.Protocol = sup.Status().Protocol
		c.Catalog = r.setup.Catalog
		c.Listing = r.listing()
		c.Subs = sup.Subscriptions()
		for _, t := range r.reg.Tools() {
			if t.Server != ServerName {
				continue
			}
			c.Tools = append(c.Tools, t.Raw.Name+"="+t.Raw.Description)
			if n := toolProc(t); !slices.Contains(c.Procs, n) {
				c.Procs = append(c.Procs, n)
			}
		}
		slices.Sort(c.Tools)
		if p := r.w.newestOf(r.inc); p != nil {
			c.Live = p.n
			c.Served = p.subscribed()
			c.Deaf = p.isDeaf()
		}
	} else {
		c.Inc = 0
	}
	r.record(func(h *History) { h.Calms = append(h.Calms, c) })
	r.logf("calm: %s, tools %v from %v, server lists %v", c.State, c.Tools, c.Procs, c.Listed)
	if !final {
		r.w.setCalm(false)
	}
}

// settle waits, in steps of simulated time, until the supervisor has been
// established with the same tools for settleQuiet, or until it has had
// long enough for the longest backoff, a Retry-After, an attempt and a
// close barrier.
func (r *run) settle() {
	limit := r.now() + max(r.setup.MaxDelay, r.setup.ProbeInterval, busyRetryAfter) + r.setup.ConnectTimeout + r.setup.CloseTimeout + time.Second
	var since time.Duration
	var last string
	for r.now() < limit {
		sup := r.sup
		if sup != nil {
			switch sup.State() {
			case conn.Connecting, conn.Established, conn.FailedRetrying, conn.LostReconnecting, conn.Disposing, conn.Disposed:
			default:
				// Stopped: the host's operator reconnects it (once: the
				// call is in flight until the attempt's outcome).
				r.reconnect(Step{Do: "reconnect"})
			}
		}
		r.sleep(settleStep)
		if sup == nil || sup.State() != conn.Established {
			since = -1
			continue
		}
		tools := fmt.Sprint(r.reg.Tools())
		if since < 0 || tools != last {
			since, last = r.now(), tools
			continue
		}
		if r.now()-since >= settleQuiet {
			return
		}
	}
}

// How settle waits: it looks every settleStep, and a supervisor
// established with the same tools for settleQuiet has settled (a re-sync
// a list change starts takes a few milliseconds of simulated time).
const (
	settleStep  = 100 * time.Millisecond
	settleQuiet = 2 * time.Second
)

// transition records a transition of supervisor inc (on its loop).
func (r *run) transition(inc int, t conn.Transition) {
	at := r.now()
	r.record(func(h *History) { h.Transitions = append(h.Transitions, Move{Inc: inc, Transition: t, At: at}) })
	line := fmt.Sprintf("supervisor %d: %s -%s-> %s (generation %d, attempt %d/%d", inc, t.From, t.Event, t.To, t.Generation, t.Attempt, t.MaxAttempts)
	if t.When != "" {
		line += ", guard " + t.When
	}
	if t.Delay > 0 {
		line += fmt.Sprintf(", delay %v", t.Delay)
	}
	line += ")"
	if t.Err != nil {
		line += ": " + t.Err.Error()
	}
	r.logf("%s", line)
}

// keptTool is a tool a host looked up and kept, with the settings of the
// supervisor that published it.
type keptTool struct {
	tool  conn.Tool
	setup Setup
}

// call makes a tool call in its own goroutine.
func (r *run) call(st Step) {
	s := r.setup
	id := r.nextID("c")
	bound := s.CallTimeout
	c := &Call{ID: id, Kind: st.Do, Inc: r.inc, Tool: st.Tool, Start: r.now(), Repeat: 1}
	public := conn.PublicToolName(ServerName, st.Tool)
	k, kept := r.kept[st.Tool]
	if st.Do == "call" || !kept {
		k.tool, kept = r.reg.Lookup(public)
		k.setup = s
		if kept {
			r.kept[st.Tool] = k
		}
	}
	if st.Do == "call-kept" && kept {
		s = k.setup // the settings of the supervisor that published it
	}
	if s.HoldCalls > 0 {
		bound = max(s.CallTimeout, s.HoldCalls) + s.CallTimeout
		if s.RetryIdempotent && safeToRepeat(st.Tool) {
			c.Repeat = 2
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if st.Deadline > 0 {
		ctx, cancel = r.deadline(st.Deadline)
		bound = min(bound, st.Deadline)
	}
	c.Bound = c.Start + bound
	r.record(func(h *History) { h.Calls = append(h.Calls, c) })
	args := callArgs{ID: id, Work: st.Work, Hang: st.Hang}
	r.host.Go(func() {
		defer cancel()
		var res *mcp.CallToolResult
		var err error
		if st.Do == "call-kept" && kept {
			res, err = k.tool.Call(ctx, args)
		} else {
			res, err = r.reg.Call(ctx, public, args)
		}
		end := r.now()
		r.mu.Lock()
		c.Returns++
		c.End, c.Err = end, err
		if res != nil {
			c.IsError = res.IsError
			for _, ct := range res.Content {
				if tc, ok := ct.(*mcp.TextContent); ok {
					c.Text += tc.Text
				}
			}
		}
		r.mu.Unlock()
		r.logf("call %s of %s returned: %q %v", id, st.Tool, c.Text, err)
	})
}

// reconnect calls Reconnect in its own goroutine.
func (r *run) reconnect(st Step) {
	sup := r.sup
	if sup == nil {
		return
	}
	c := &Call{ID: r.nextID("r"), Kind: "reconnect", Inc: r.inc, Start: r.now()}
	ctx, cancel := context.WithCancel(context.Background())
	if st.Deadline > 0 {
		ctx, cancel = r.deadline(st.Deadline)
		c.Bound = c.Start + st.Deadline
	}
	r.record(func(h *History) { h.Calls = append(h.Calls, c) })
	r.host.Go(func() {
		defer cancel()
		err := sup.Reconnect(ctx)
		r.returned(c, err)
	})
}

// subscribe calls Subscribe or Unsubscribe in its own goroutine.
func (r *run) subscribe(st Step) {
	sup := r.sup
	if sup == nil {
		return
	}
	c := &Call{ID: r.nextID("s"), Kind: st.Do, Inc: r.inc, Tool: st.URI, Start: r.now()}
	c.Bound = c.Start + min(5*time.Second, r.setup.CallTimeout)
	ctx, cancel := r.deadline(5 * time.Second)
	r.record(func(h *History) { h.Calls = append(h.Calls, c) })
	r.host.Go(func() {
		defer cancel()
		var err error
		if st.Do == "subscribe" {
			err = sup.Subscribe(ctx, st.URI)
		} else {
			err = sup.Unsubscribe(ctx, st.URI)
		}
		r.returned(c, err)
	})
}

// roots calls SetRoots in its own goroutine.
func (r *run) roots(uris []string) {
	sup := r.sup
	if sup == nil {
		return
	}
	c := &Call{ID: r.nextID("o"), Kind: "roots", Inc: r.inc, Start: r.now()}
	var roots []*mcp.Root
	for _, uri := range uris {
		roots = append(roots, &mcp.Root{URI: uri})
	}
	r.record(func(h *History) { h.Calls = append(h.Calls, c) })
	r.host.Go(func() { r.returned(c, sup.SetRoots(roots...)) })
}

func (r *run) returned(c *Call, err error) {
	end := r.now()
	r.mu.Lock()
	c.Returns++
	c.End, c.Err = end, err
	r.mu.Unlock()
	r.logf("%s %s returned: %v", c.Kind, c.ID, err)
}

func (r *run) nextID(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return fmt.Sprintf("%s%d", prefix, r.seq)
}
