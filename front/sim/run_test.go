//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and simulated.

package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options tune a run.
type Options struct {
	// Stall is how long, in real time, a run may make no progress before
	// it is reported stopped, with its goroutines' stacks. Zero means 10s.
	Stall time.Duration
}

// Result is how a run ended.
type Result struct {
	Seed uint64
	// Violations are the broken invariants of the first check that found
	// any; none if the run kept every promise.
	Violations []Violation
	// Log is the run's log: what the driver did and saw, one line each,
	// prefixed with the simulated time.
	Log []string
	// Stalled says goroutines of the run are blocked for good (it
	// stopped making progress, or it leaked them), and the process cannot
	// end them: the caller should end the process once it reported it.
	Stalled bool
}

// Run runs seed in a testing/synctest bubble of t and returns how it
// ended. A run that stops making progress (a deadlock: every goroutine
// waits and simulated time cannot move) is reported after opts.Stall of
// real time as a violation of Progress; its goroutines stay blocked, so
// the caller should end the process once it has reported it.
func Run(t *testing.T, seed uint64, opts Options) Result {
	if opts.Stall == 0 {
		opts.Stall = 10 * time.Second
	}
	// The host's config file, which its watcher reloads. A process that
	// ends in the middle of runs (a stall, a planted bug found) leaves
	// theirs behind.
	dir, err := os.MkdirTemp("", "frontsim-")
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	path := filepath.Join(dir, "servers.json")
	var steps atomic.Int64
	done := make(chan Result, 1)
	var r *run
	var bubble string // "synctest bubble N]", as stack dumps name the run's bubble
	var rmu sync.Mutex
	finished := make(chan struct{}) // synctest.Test returned
	go func() {
		defer close(finished)
		synctest.Test(t, func(*testing.T) {
			rr := newRun(seed, &steps, path)
			rmu.Lock()
			r, bubble = rr, ownBubble()
			rmu.Unlock()
			res := rr.main()
			done <- res
			if res.Stalled {
				// Goroutines of the run wait for good: keep the bubble from
				// ending (synctest would panic), on a lock, which does not
				// count as durably blocked.
				var mu sync.Mutex
				mu.Lock()
				mu.Lock()
			}
		})
	}()
	last, since, others := steps.Load(), time.Now(), allSteps.Load()
	tick := time.NewTicker(opts.Stall / 20)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			if !res.Stalled {
				// The bubble's test ends after the run sends its result;
				// returning before it did raced the testing package's
				// bookkeeping of t with the test's end (the -race
				// failure of front/sim seen once in 42 runs).
				<-finished
				_ = os.RemoveAll(dir)
			}
			return res
		case <-tick.C:
		}
		if n := steps.Load(); n != last {
			last, since, others = n, time.Now(), allSteps.Load()
			continue
		}
		if time.Since(since) < opts.Stall {
			continue
		}
		buf := make([]byte, 8<<20)
		buf = buf[:runtime.Stack(buf, true)]
		rmu.Lock()
		b := bubble
		rmu.Unlock()
		if allSteps.Load()-others < othersMoved && busy(string(buf), b) {
			// No other run moved either, and goroutines wait for a CPU,
			// not for a lock: the process is starved (a loaded machine,
			// -race, nice), not stuck. Under `nice -n 19` on a loaded
			// host every -race run of 200 seeds was reported stalled
			// after 10 s without this.
			since, others = time.Now(), allSteps.Load()
			continue
		}
		waiters, _ := lockWaiters(string(buf))
		res := Result{Seed: seed, Stalled: true}
		rmu.Lock()
		if r != nil {
			r.mu.Lock()
			h := r.h
			h.Now = r.lastNow
			h.Stalled = waiters
			if h.Stalled == "" {
				h.Stalled = "(none)"
			}
			h.Stalled += "\n\nthe bubble's other goroutines:\n\n" + bubbleOthers(string(buf))
			res.Violations = progress(&h)
			res.Log = slices.Clone(r.log)
			r.mu.Unlock()
		}
		rmu.Unlock()
		return res
	}
}

// allSteps counts the steps of every run of the process. A run that
// stops while the others made othersMoved steps is stuck, not starved.
var allSteps atomic.Int64

const othersMoved = 100

// run is one simulated run: a front over the world's backends served
// over in-memory HTTP to clients of both eras, driven by a seed.
type run struct {
	seed  uint64
	path  string // the host's config file
	rng   *rand.Rand
	steps *atomic.Int64
	t0    time.Time

	w       *world
	f       *front.Front
	handler http.Handler

	sessionTimeout time.Duration

	mu      sync.Mutex
	h       History
	log     []string
	lastNow time.Duration
	reqs    int
	clients []*simClient
	wg      sync.WaitGroup // the clients' requests
}

// simClient is one client of the front.
type simClient struct {
	name   string
	rec    *ClientRec
	client *mcp.Client
	sess   *mcp.ClientSession
	roots  []string // its roots now
	gone   bool     // closed or vanished: the driver uses it no more
	rounds []*round // a modern client's calls that await its answers
	// closedAt is when it closed its session with requests in flight.
	closedAt time.Duration
}

// byName is the client called name; r.mu is held.
func (r *run) byName(name string) *simClient {
	for _, c := range r.clients {
		if c.name == name {
			return c
		}
	}
	return nil
}

// round is a bridged call's input_required result, to answer.
type round struct {
	server, tool string
	args         map[string]any
	res          *mcp.CallToolResult
}

func newRun(seed uint64, steps *atomic.Int64, path string) *run {
	return &run{seed: seed, rng: rand.New(rand.NewPCG(seed, 0x6777)), steps: steps, t0: time.Now(), path: path}
}

func (r *run) nowLocked() time.Duration {
	r.lastNow = time.Since(r.t0)
	return r.lastNow
}

func (r *run) now() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nowLocked()
}

func (r *run) logf(format string, args ...any) {
	line := random.ReplaceAllString(fmt.Sprintf(format, args...), "$1…")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmtD(r.nowLocked())+" "+line)
}

// random matches what a log line holds that no seed decides: session ids
// and requestStates, drawn from crypto/rand.
var random = regexp.MustCompile(`(session ID: |mcpfsm-)[A-Za-z0-9_-]+`)

// active counts a request the instance of rec serves (rec nil: a shared
// instance).
func (r *run) active(rec *InstanceRec, d int) {
	if rec == nil {
		return
	}
	r.mu.Lock()
	rec.Active += d
	r.mu.Unlock()
}

func (r *run) sight(s Sighting) {
	r.mu.Lock()
	s.At = r.nowLocked()
	r.h.Sightings = append(r.h.Sightings, s)
	r.mu.Unlock()
}

// main runs the whole seed.
func (r *run) main() Result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idle := []time.Duration{20 * time.Second, 45 * time.Second, 90 * time.Second}[r.rng.IntN(3)]
	r.sessionTimeout = []time.Duration{time.Minute, 3 * time.Minute}[r.rng.IntN(2)]
	r.h = History{Idle: idle, Slack: 2 * time.Second, Clients: map[string]*ClientRec{}}
	r.w = newWorld(r, []int{0, 0, 3}[r.rng.IntN(3)], r.path)
	reg := conn.NewRegistry()
	r.w.Host = host.New(r.w.hostOptions(reg, func() *front.Front { return r.f }))
	r.f = front.New(front.Options{Registry: reg, Backends: r.w, Clock: clock.New(),
		Logger: slog.New(slog.DiscardHandler), InstanceIdle: idle})
	r.logf("seed %d: idle %v, session timeout %v, max instances %d", r.seed, idle, r.sessionTimeout, r.w.maxInst)
	if err := r.w.start(ctx); err != nil {
		r.logf("the host did not start: %v", err)
	}
	for _, s := range r.w.Failures() {
		r.logf("shared instance of %s did not start: %v", s.Config.Name, s.Err)
	}
	time.Sleep(time.Second)
	synctest.Wait()
	r.f.Update()
	synced := make(chan struct{})
	go func() { defer close(synced); r.f.Sync(ctx) }()
	r.handler = r.f.HTTPHandler(front.HTTPOptions{SessionTimeout: r.sessionTimeout, HostChecked: true,
		Subject: func(req *http.Request) string { return req.Header.Get(subjectHeader) }})

	for range 2 + r.rng.IntN(3) {
		r.join(ctx)
	}
	var found []Violation
	steps := 30 + r.rng.IntN(40)
	for range steps {
		time.Sleep(time.Duration(r.rng.Int64N(int64(15 * time.Second))))
		synctest.Wait()
		r.step(ctx)
		synctest.Wait()
		r.steps.Add(1)
		allSteps.Add(1)
		if found = r.check(); len(found) > 0 {
			break
		}
	}
	// The end: every request ends, every client closes, everything the
	// front holds expires; then the instances must all be closed.
	r.mu.Lock()
	for _, c := range r.clients {
		c.rounds = nil
	}
	r.mu.Unlock()
	time.Sleep(2 * time.Minute)
	r.wg.Wait()
	for _, c := range r.clients {
		r.leave(c, "closes at the end")
		_ = c.sess.Close()
	}
	synctest.Wait()
	time.Sleep(r.sessionTimeout + idle + 6*time.Minute)
	synctest.Wait()
	r.steps.Add(1)
	allSteps.Add(1)
	if len(found) == 0 {
		found = r.check()
	}
	cancel()
	<-synced
	<-r.w.watched
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	if err := r.f.Close(cctx); err != nil {
		r.logf("front did not close: %v", err)
	}
	if err := r.w.close(cctx); err != nil {
		r.logf("backends did not close: %v", err)
	}
	synctest.Wait()
	time.Sleep(24 * time.Hour) // every timer left fires
	synctest.Wait()
	leaks := bubbleLeaks()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(leaks) > 0 && len(found) == 0 {
		found = noLeak(&History{Leaks: leaks})
	}
	return Result{Seed: r.seed, Violations: found, Log: slices.Clone(r.log), Stalled: len(leaks) > 0}
}

// check checks every invariant on the history so far.
func (r *run) check() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.h
	h.Now = r.nowLocked()
	// A 2026-07-28 client has no session: the front may end it once it
	// sent nothing for the session timeout.
	h.Clients = map[string]*ClientRec{}
	for name, c := range r.h.Clients {
		cp := *c
		if cl := r.byName(name); cl != nil && cl.closedAt > 0 && c.Ended < 0 {
			// A session closed with requests in flight ends once they
			// ended on their backends: go-sdk's server answers the DELETE
			// then, and the front ends the client with its session.
			end, busy := cl.closedAt, false
			for _, q := range r.h.Requests {
				if q.Client == name && q.Closing {
					busy = busy || q.End < 0 || q.AtBackend
					end = max(end, q.End, q.Backend)
				}
			}
			if !busy {
				cp.Ended = end
			}
		}
		if c.Modern && c.Ended < 0 {
			last, busy := time.Duration(0), false
			for _, q := range r.h.Requests {
				if q.Client == name {
					busy = busy || q.End < 0 || q.AtBackend
					last = max(last, q.End, q.Backend)
				}
			}
			if !busy && last > 0 && h.Now-last > r.sessionTimeout {
				cp.Ended = last + r.sessionTimeout
			}
		}
		h.Clients[name] = &cp
	}
	return Check(&h)
}

// step does one thing the seed chooses.
func (r *run) step(ctx context.Context) {
	live := r.live()
	n := r.rng.IntN(100)
	switch {
	case len(live) == 0 || n < 5:
		r.join(ctx)
	case n < 55:
		c := live[r.rng.IntN(len(live))]
		server, tool := perClient, []string{"echo", "roots", "ask", "ask", "slow"}[r.rng.IntN(5)]
		if r.rng.IntN(4) == 0 {
			server, tool = shared, []string{"echo", "ask", "slow"}[r.rng.IntN(3)]
		}
		r.call(ctx, c, server, tool)
	case n < 70:
		r.roundStep(ctx, live)
	case n < 78:
		c := live[r.rng.IntN(len(live))]
		if !c.rec.Modern && r.rng.IntN(2) == 0 {
			// Its roots change while the call starts its instance.
			r.w.mu.Lock()
			r.w.race = c
			r.w.mu.Unlock()
			r.call(ctx, c, perClient, "roots")
			return
		}
		k := len(c.roots)
		uri := fmt.Sprintf("file:///%s/%d", c.name, k)
		r.mu.Lock()
		c.roots = append(c.roots, uri)
		r.mu.Unlock()
		r.logf("%s: roots change to %d", c.name, k+1)
		if !c.rec.Modern {
			c.client.AddRoots(&mcp.Root{URI: uri})
		}
	case n < 82:
		c := live[r.rng.IntN(len(live))]
		if c.rec.Modern {
			r.vanish(c)
		} else {
			r.mu.Lock()
			closing := false
			for _, q := range r.h.Requests {
				if q.Client == c.name && (q.End < 0 || q.AtBackend) {
					q.Closing, closing = true, true
				}
			}
			r.mu.Unlock()
			r.leave(c, "closes its session")
			if closing {
				// go-sdk's server ends the session once these requests
				// ended on their backends (see check).
				r.mu.Lock()
				c.rec.Ended = -1
				c.closedAt = r.nowLocked()
				r.mu.Unlock()
			}
			r.wg.Go(func() { _ = c.sess.Close() })
		}
	case n < 85:
		r.vanish(live[r.rng.IntN(len(live))])
	case n < 93:
		servers := r.w.crashable()
		i := r.rng.IntN(len(servers))
		r.logf("backend %d crashes", i)
		servers[i].Crash()
	default:
		kind := r.rng.IntN(3)
		r.logf("reload %s", []string{"restarts " + perClient, "restarts " + shared, "changes the rate limit of " + perClient}[kind])
		r.w.reload(ctx, kind)
	}
}

// live are the clients the driver still uses.
func (r *run) live() []*simClient {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*simClient
	for _, c := range r.clients {
		if !c.gone {
			out = append(out, c)
		}
	}
	return out
}

// join connects a new client, of an era the seed chooses.
func (r *run) join(ctx context.Context) {
	r.mu.Lock()
	if len(r.clients) >= 8 {
		r.mu.Unlock()
		return
	}
	name := fmt.Sprintf("c%d", len(r.clients)+1)
	modern := r.rng.IntN(2) == 0
	c := &simClient{name: name, rec: &ClientRec{Name: name, Modern: modern, Ended: -1}, roots: []string{"file:///" + name + "/0"}}
	r.h.Clients[name] = c.rec
	r.mu.Unlock()
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.sight(Sighting{Client: name, Owner: owner(strings.TrimPrefix(req.Params.Message, "for ")), What: "elicitation", Detail: req.Params.Message})
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
	}
	so := &mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion}
	if modern {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		so = nil
	}
	c.client = mcp.NewClient(&mcp.Implementation{Name: name}, opts)
	c.client.AddRoots(&mcp.Root{URI: c.roots[0]})
	tr := &mcp.StreamableClientTransport{Endpoint: "http://front.sim/mcp", DisableStandaloneSSE: modern,
		HTTPClient: &http.Client{Transport: &memTransport{h: r.handler, subject: name}}}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, err := c.client.Connect(cctx, tr, so)
	if err != nil {
		r.logf("%s: connect: %v", name, err)
		r.mu.Lock()
		c.rec.Ended = r.nowLocked()
		r.mu.Unlock()
		return
	}
	c.sess = sess
	r.mu.Lock()
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	era := "2025-11-25 session"
	if modern {
		era = "2026-07-28"
	}
	r.logf("%s joins (%s)", name, era)
}

// leave marks c ended now.
func (r *run) leave(c *simClient, why string) {
	r.mu.Lock()
	was := c.gone
	c.gone = true
	if c.rec.Ended < 0 && !c.rec.Modern {
		c.rec.Ended = r.nowLocked()
	}
	r.mu.Unlock()
	if !was {
		r.logf("%s %s", c.name, why)
	}
}

// vanish stops using c without a word: its session is left to expire.
func (r *run) vanish(c *simClient) {
	r.mu.Lock()
	c.gone = true
	r.mu.Unlock()
	r.logf("%s vanishes", c.name)
}

// owner is the client of a tag "<client>#<n>".
func owner(tag string) string {
	o, _, _ := strings.Cut(tag, "#")
	return o
}

// request records a request of client and returns its record.
func (r *run) request(client, what string, timeout time.Duration) *RequestRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs++
	now := r.nowLocked()
	q := &RequestRec{ID: r.reqs, Client: client, What: what, Start: now, Deadline: now + timeout, End: -1}
	r.h.Requests = append(r.h.Requests, q)
	return q
}

// call makes c call tool of server, on a goroutine.
func (r *run) call(ctx context.Context, c *simClient, server, tool string) {
	timeout := []time.Duration{5 * time.Second, 20 * time.Second, time.Minute}[r.rng.IntN(3)]
	q := r.request(c.name, server+"/"+tool, timeout)
	args := map[string]any{"tag": fmt.Sprintf("%s#%d", c.name, q.ID), "wait": r.rng.IntN(40_000)}
	r.logf("%s#%d calls %s of %s (timeout %v)", c.name, q.ID, tool, server, timeout)
	r.wg.Go(func() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res, err := c.sess.CallTool(cctx, &mcp.CallToolParams{Name: "mcp__" + server + "__" + tool, Arguments: args})
		r.done(q)
		r.outcome(c, q, server, tool, args, res, err)
	})
}

// done records that q returned.
func (r *run) done(q *RequestRec) {
	r.mu.Lock()
	q.End = r.nowLocked()
	r.mu.Unlock()
}

// outcome takes note of what a request of c's returned: the sightings in
// its result, and a bridged call's input requests.
func (r *run) outcome(c *simClient, q *RequestRec, server, tool string, args map[string]any, res *mcp.CallToolResult, err error) {
	tag := fmt.Sprintf("%s#%d", c.name, q.ID)
	if err != nil {
		r.logf("%s: error: %s", tag, err)
		if msg := err.Error(); strings.Contains(msg, "session not found") || strings.Contains(msg, "client is closing") {
			// Its session expired, or its connection ended: the client
			// is gone, as one that vanished.
			r.mu.Lock()
			c.gone = true
			r.mu.Unlock()
		}
		return
	}
	if res.NeedsInput() {
		var kinds []string
		for _, in := range res.InputRequests {
			switch p := in.(type) {
			case *mcp.ElicitParams:
				kinds = append(kinds, "elicitation")
				r.sight(Sighting{Client: c.name, Owner: owner(strings.TrimPrefix(p.Message, "for ")), What: "elicitation", Detail: p.Message})
			case *mcp.ListRootsParams:
				kinds = append(kinds, "roots")
			default:
				kinds = append(kinds, fmt.Sprintf("%T", in))
			}
		}
		slices.Sort(kinds)
		r.logf("%s: input required: %s", tag, strings.Join(kinds, ","))
		r.mu.Lock()
		c.rounds = append(c.rounds, &round{server: server, tool: tool, args: args, res: res})
		r.mu.Unlock()
		return
	}
	var texts []string
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	text := strings.Join(texts, "")
	r.logf("%s: result (error %v): %s", tag, res.IsError, text)
	if res.IsError {
		return
	}
	callTag, rest, ok := strings.Cut(text, "|")
	if !ok {
		return
	}
	who := owner(callTag)
	r.sight(Sighting{Client: c.name, Owner: who, What: "result", Detail: text})
	switch {
	case strings.HasPrefix(rest, "roots:"):
		for uri := range strings.SplitSeq(strings.TrimPrefix(rest, "roots:"), ",") {
			if uri == "" {
				continue
			}
			o, _, _ := strings.Cut(strings.TrimPrefix(uri, "file:///"), "/")
			r.sight(Sighting{Client: c.name, Owner: o, What: "roots", Detail: uri})
		}
	case strings.HasPrefix(rest, "accept:"):
		if name := strings.TrimPrefix(rest, "accept:"); name != "" {
			// name answered the elicitation of who's call.
			r.sight(Sighting{Client: name, Owner: who, What: "answer", Detail: text})
		}
	}
}

// roundStep answers, abandons or replays a modern client's pending round.
func (r *run) roundStep(ctx context.Context, live []*simClient) {
	var withRounds []*simClient
	r.mu.Lock()
	for _, c := range live {
		if len(c.rounds) > 0 {
			withRounds = append(withRounds, c)
		}
	}
	r.mu.Unlock()
	if len(withRounds) == 0 {
		return
	}
	c := withRounds[r.rng.IntN(len(withRounds))]
	r.mu.Lock()
	rd := c.rounds[0]
	c.rounds = c.rounds[1:]
	r.mu.Unlock()
	tag := rd.args["tag"].(string)
	switch n := r.rng.IntN(10); {
	case n < 2:
		r.logf("%s: %s abandons its round", tag, c.name)
	case n < 4:
		var others []*simClient
		for _, o := range live {
			if o != c && o.rec.Modern {
				others = append(others, o)
			}
		}
		if len(others) == 0 {
			r.answer(ctx, c, c, rd)
			return
		}
		o := others[r.rng.IntN(len(others))]
		r.logf("%s: %s replays %s's round", tag, o.name, c.name)
		r.answer(ctx, o, c, rd)
		if r.rng.IntN(2) == 0 {
			r.answer(ctx, c, c, rd)
		}
	default:
		r.answer(ctx, c, c, rd)
	}
}

// answer sends rd's next round trip as by's (c's own, or a replay by
// another client), with by's answers.
func (r *run) answer(ctx context.Context, by, c *simClient, rd *round) {
	answers := mcp.InputResponseMap{}
	r.mu.Lock()
	roots := slices.Clone(by.roots)
	r.mu.Unlock()
	for id, in := range rd.res.InputRequests {
		switch in.(type) {
		case *mcp.ElicitParams:
			answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": by.name}}
		case *mcp.ListRootsParams:
			res := &mcp.ListRootsResult{}
			for _, u := range roots {
				res.Roots = append(res.Roots, &mcp.Root{URI: u})
			}
			answers[id] = res
		}
	}
	timeout := []time.Duration{5 * time.Second, 20 * time.Second, time.Minute}[r.rng.IntN(3)]
	q := r.request(by.name, rd.server+"/"+rd.tool+" round", timeout)
	r.logf("%s#%d answers the round of %s (timeout %v)", by.name, q.ID, rd.args["tag"], timeout)
	r.wg.Go(func() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res, err := by.sess.CallTool(cctx, &mcp.CallToolParams{Name: "mcp__" + rd.server + "__" + rd.tool, Arguments: rd.args,
			RequestState: rd.res.RequestState, InputResponses: answers})
		r.done(q)
		r.outcome(by, q, rd.server, rd.tool, rd.args, res, err)
	})
}
