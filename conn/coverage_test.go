package conn_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/fsmtest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// The coverage tests derive, from each of conn's tables, the shortest
// event path to every edge and guard branch (fsmtest.Paths), drive a real
// supervisor along each path with a scripted server and the fake clock,
// and count the transitions the supervisor reports taking. They fail below
// 100%, naming what they could not reach, and print the coverage line
// (go test -run Coverage -v ./conn/ | grep 'fsm coverage').

type (
	connStep = fsmtest.Step[conn.State, conn.Event]
	connPath = fsmtest.Path[conn.State, conn.Event]
)

// coveragePolicy grants one retry per outage, so that a second failure
// in a row spends the budget, and probes once exhausted.
var coveragePolicy = policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 1, ProbeInterval: 10 * time.Second}

// connRun is one supervisor driven along one path.
type connRun struct {
	t    *testing.T
	clk  *clock.Mock
	srv  *conntest.Server
	rec  *conntest.Recorder
	sup  *conn.Supervisor
	auth atomic.Bool // the next attempt's server refuses authorization
	// signIn makes the next attempt's server the HTTP one behind
	// sign-in (see signInServer); its refuse flag says whether it answers
	// 401 now.
	signIn   atomic.Bool
	signedIn *signInServer
	held     *conntest.HeldTransport
	// release ends a hold of the server's tools/list (HoldLists).
	release func()
	bg      sync.WaitGroup // Reconnect and Close calls in flight

	mu    sync.Mutex
	steps []connStep // what OnTransition reported
	inner chan innerStep
}

// innerStep is a step of an inner machine (tool-sync, generation).
type innerStep struct{ machine, from, event, when, to string }

// newConnRun starts a supervisor whose transport is the scripted server,
// or, while auth is set, an HTTP endpoint that answers 401.
func newConnRun(t *testing.T, p policy.Policy, steps []connStep) *connRun {
	return newConnRunWith(t, p, steps, false, nil)
}

// newConnRunHolding is newConnRun; with hold, every tools/list waits at
// the server from the start until r.release is called.
func newConnRunHolding(t *testing.T, p policy.Policy, steps []connStep, hold bool) *connRun {
	return newConnRunWith(t, p, steps, hold, nil)
}

// newConnRunWith is newConnRunHolding with tweak applied to the Config.
func newConnRunWith(t *testing.T, p policy.Policy, steps []connStep, hold bool, tweak func(*conn.Config)) *connRun {
	t.Helper()
	r := &connRun{t: t, clk: clock.NewMock(), srv: conntest.NewServer(), rec: conntest.NewRecorder(), inner: make(chan innerStep, 10000)}
	r.srv.AddEchoTool("echo")
	if hold {
		r.release = r.srv.HoldLists()
		t.Cleanup(r.release)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad token", http.StatusUnauthorized)
	}))
	client := &http.Client{Transport: &http.Transport{}}
	refusing := conn.Streamable(ts.URL)
	refusing.Client = client
	r.signedIn = newSignInServer(t)
	scripted := r.srv.Transport()
	cfg := conn.Config{
		Name: "fx", Registry: conn.NewRegistry(), Reconnect: &p, Clock: r.clk, Logger: r.rec.Logger(),
		// Pings only when a path asks for one (a lost sign-in), far
		// beyond every other delay a path waits out.
		KeepAlive: coverageKeepAlive,
		Transport: conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
			if r.auth.Swap(false) {
				return refusing.Open(ctx)
			}
			if r.signIn.Swap(false) {
				return r.signedIn.transport.Open(ctx)
			}
			return scripted.Open(ctx)
		}),
		OnTransition: func(tr conn.Transition) {
			r.mu.Lock()
			r.steps = append(r.steps, connStep{From: tr.From, Event: tr.Event, When: tr.When, To: tr.To})
			r.mu.Unlock()
			r.rec.OnTransition(tr)
		},
	}
	conn.ObserveSteps(&cfg, func(machine, from, event, when, to string) {
		select {
		case r.inner <- innerStep{machine, from, event, when, to}:
		default:
			t.Errorf("inner step %s %s --%s--> %s dropped: raise the buffer", machine, from, event, to)
		}
	})
	if tweak != nil {
		tweak(&cfg)
	}
	r.prepare(steps)
	sup, err := conn.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.sup = sup
	t.Cleanup(func() {
		r.close()
		ts.Close()
		client.CloseIdleConnections()
	})
	return r
}

// coverageKeepAlive is the coverage runs' keep-alive interval.
const coverageKeepAlive = time.Hour

// signInServer is a Streamable HTTP server with the echo tool that
// answers 401 while refuse is set, and the OAuth handler of its
// transport, which has no credential to offer and says how to sign in.
type signInServer struct {
	refuse    atomic.Bool
	handler   *noCredential
	transport *conn.HTTP
}

func newSignInServer(t *testing.T) *signInServer {
	s := &signInServer{handler: &noCredential{arrived: make(chan struct{}, 1)}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "signin"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refuse.Load() {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		client.CloseIdleConnections()
	})
	s.transport = conn.Streamable(ts.URL)
	s.transport.Client = client
	s.transport.OAuthHandler = s.handler
	return s
}

// noCredential is an OAuth handler with no credential: Authorize asks
// for a sign-in, and WaitCredential returns once arrive is called.
type noCredential struct{ arrived chan struct{} }

func (*noCredential) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }
func (*noCredential) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return &conn.SignInError{How: "run: mcpfsm auth login fx -config mcp.json"}
}
func (h *noCredential) WaitCredential(ctx context.Context) error {
	select {
	case <-h.arrived:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (h *noCredential) arrive() { h.arrived <- struct{}{} }

// close disposes of the supervisor and lets everything it held go.
func (r *connRun) close() {
	if r.held != nil {
		r.held.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_ = r.sup.Close(ctx)
	r.bg.Wait()
	r.srv.Close()
}

// taken returns the connection steps reported so far.
func (r *connRun) taken() []connStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connStep(nil), r.steps...)
}

// prepare scripts the attempt that starts next so that it ends as step
// next (from connecting) needs, and the session it may bring up as the
// step after it (then) needs.
func (r *connRun) prepare(steps []connStep) {
	b := conntest.Accept
	if len(steps) > 0 {
		switch next := steps[0]; {
		case next.Event == conn.EventConnected:
			if len(steps) > 1 && steps[1].When == "not released" {
				b = conntest.Held
			}
			if len(steps) > 1 && steps[1].When == "sign-in required" {
				r.signedIn.refuse.Store(false)
				r.signIn.Store(true)
			}
		case next.Event == conn.EventDispose:
			b = conntest.Hang
		case next.When == "not released":
			b = conntest.HeldRefuse
		case next.When == "authorization refused":
			r.auth.Store(true)
		case next.When == "sign-in required":
			r.signedIn.refuse.Store(true)
			r.signIn.Store(true)
		case next.When == "no retry can fix it":
			r.srv.Plan(conntest.Missing, conntest.Missing, conntest.Accept)
			return
		case next.When == "budget spent":
			r.srv.Plan(conntest.Refuse, conntest.Refuse, conntest.Accept)
			return
		default:
			b = conntest.Refuse
		}
	}
	r.srv.Plan(b, conntest.Accept)
}

// expect waits for transitions into states, in order.
func (r *connRun) expect(states ...conn.State) { r.rec.Expect(r.t, waitLimit, states...) }

// background runs f (a Reconnect or Close, which wait) off the test's
// goroutine.
func (r *connRun) background(f func(ctx context.Context)) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		f(ctx)
	}()
}

// take makes the supervisor take steps[0], whose From is its state; the
// rest of the path tells it how to script the attempt a step starts.
func (r *connRun) take(steps []connStep) {
	st, rest := steps[0], steps[1:]
	switch st.Event {
	case conn.EventConnected:
		if len(rest) > 0 && rest[0].When == "not released" {
			r.held = waitFor(r.t, r.srv.HeldTransports(), "the held transport")
		}
		r.expect(conn.Established)
	case conn.EventAttemptFailed:
		switch st.When {
		case "not released":
			r.held = waitFor(r.t, r.srv.HeldTransports(), "the held transport")
			<-r.held.Terminated()
			r.clk.Add(conn.DefaultCloseTimeout)
		case "no retry can fix it", "budget spent":
			// One failure is retried; the second in a row is the step.
			r.expect(conn.FailedRetrying)
			r.clk.Add(coveragePolicy.InitialDelay)
			r.expect(conn.Connecting)
		}
		r.expect(st.To)
	case conn.EventConnectionLost:
		if st.When == "sign-in required" {
			// The server starts refusing the session's token; the next
			// keep-alive ping meets the 401 and the handler's sign-in.
			r.signedIn.refuse.Store(true)
			r.clk.Add(coverageKeepAlive)
			r.expect(st.To)
			return
		}
		if st.When == "budget spent" {
			// The loss after the one retry spends the budget.
			r.srv.Plan(conntest.Accept)
			r.srv.Crash()
			r.expect(conn.LostReconnecting)
			r.clk.Add(coveragePolicy.InitialDelay)
			r.expect(conn.Connecting, conn.Established)
		}
		r.srv.Crash()
		if st.When == "not released" {
			<-r.held.Terminated()
			r.clk.Add(conn.DefaultCloseTimeout)
		}
		r.expect(st.To)
	case conn.EventBackoffElapsed:
		r.prepare(rest)
		r.clk.Add(coveragePolicy.InitialDelay)
		r.expect(conn.Connecting)
	case conn.EventAuthorized:
		r.prepare(rest)
		r.signedIn.handler.arrive()
		r.expect(conn.Connecting)
	case conn.EventProbe:
		r.prepare(rest)
		r.clk.Add(coveragePolicy.ProbeInterval)
		r.expect(conn.Connecting)
	case conn.EventReconnect:
		if st.From == conn.Halted {
			r.held.Release()
			r.rec.WaitLog(r.t, waitLimit, slog.LevelInfo, "the server process that halted reconnecting has exited")
		}
		r.prepare(rest)
		r.background(func(ctx context.Context) { _ = r.sup.Reconnect(ctx) })
		r.expect(conn.Connecting)
	case conn.EventDispose:
		r.background(func(ctx context.Context) { _ = r.sup.Close(ctx) })
		r.expect(conn.Disposing)
	case conn.EventDisposed:
		r.expect(conn.Disposed)
	default:
		r.t.Fatalf("no way to drive event %s", st.Event)
	}
}

// driveConnection drives a fresh supervisor along p and returns the steps
// it reported, Close's included.
func driveConnection(t *testing.T, p connPath) []connStep {
	var out []connStep
	t.Run(p.String(), func(t *testing.T) {
		pol := coveragePolicy
		for _, st := range p.Steps {
			if st.When == "reconnect disabled" {
				pol.Enabled = false
			}
		}
		r := newConnRun(t, pol, p.Steps)
		for i := range p.Steps {
			r.take(p.Steps[i:])
		}
		r.close()
		out = r.taken()
	})
	return out
}

// coverageLine prints the line on stdout, where CI's log shows it even
// when the test passes.
func coverageLine[S ~string, E ~string](c *fsmtest.Coverage[S, E]) { fmt.Println(c.String()) }

func TestCoverageConnection(t *testing.T) {
	c := fsmtest.Drive(t, conn.Table(), func(p connPath) []connStep { return driveConnection(t, p) })
	coverageLine(c)
}

type syncStep = fsmtest.Step[conn.SyncState, conn.SyncEvent]

// waitInner waits for the next step of machine to be want, skipping other
// machines' steps, and returns it.
func (r *connRun) waitInner(machine string, want func(innerStep) bool, what string) innerStep {
	r.t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case st := <-r.inner:
			if st.machine == machine && want(st) {
				return st
			}
		case <-deadline:
			r.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestCoverageToolSync drives the tool-sync machine of a supervisor's
// generation along every path: its listings are held at the server while
// the server changes its tools, so that list_changed arrives mid-listing.
func TestCoverageToolSync(t *testing.T) {
	spec := conn.SyncTable()
	c := fsmtest.Drive(t, spec, func(p fsmtest.Path[conn.SyncState, conn.SyncEvent]) []syncStep {
		var took []syncStep
		t.Run(p.String(), func(t *testing.T) {
			// A change during the attempt's own listing needs that
			// listing held.
			hold := p.Steps[0].Event == conn.SyncChanged
			r := newConnRunHolding(t, coveragePolicy, nil, hold)
			if hold {
				waitFor(t, r.srv.ListEntered(), "the attempt's listing at the hold")
			}
			tools := 0
			for _, st := range p.Steps {
				switch st.Event {
				case conn.SyncChanged:
					tools++
					r.srv.AddEchoTool(fmt.Sprintf("t%d", tools))
				case conn.SyncListed:
					if r.release != nil {
						r.release()
					}
				}
				r.waitInner("tool-sync", func(got innerStep) bool {
					took = append(took, syncStep{From: conn.SyncState(got.from), Event: conn.SyncEvent(got.event), When: got.when, To: conn.SyncState(got.to)})
					return got.from == string(st.From) && got.event == string(st.Event) && got.to == string(st.To)
				}, fmt.Sprintf("%s --%s--> %s", st.From, st.Event, st.To))
			}
		})
		return took
	})
	coverageLine(c)
}

// waitFor receives from ch within waitLimit.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// coverageTB records what fsmtest.Drive reports, so that a test can see
// the coverage check fail.
type coverageTB struct {
	testing.TB
	errors []string
}

func (f *coverageTB) Helper()             {}
func (f *coverageTB) Logf(string, ...any) {}
func (f *coverageTB) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}

// TestCoverageFailsOnUntakenBranch proves the check can fail: the
// connection table with one more guard branch, which the supervisor never
// takes, is driven along every path as above, and the check names it.
func TestCoverageFailsOnUntakenBranch(t *testing.T) {
	spec := conn.Table()
	never := fsm.Transition[conn.State, conn.Event, conn.Payload]{Event: conn.EventProbe, From: []conn.State{conn.Exhausted},
		To: conn.Connecting, Guard: func(conn.Payload) bool { return false }, When: "never"}
	for i, tr := range spec.Transitions {
		if tr.Event == conn.EventProbe {
			spec.Transitions = slices.Insert(spec.Transitions, i, never)
			break
		}
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	var tb coverageTB
	c := fsmtest.Drive(&tb, spec, func(p connPath) []connStep { return driveConnection(t, p) })
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "not reached: exhausted --probe [never]--> connecting") {
		t.Fatalf("Drive reported %q, want one failure naming the [never] branch", tb.errors)
	}
	if got, want := c.String(), "fsm coverage connection: 21/21 edges, 21/22 branches (95.5%)"; got != want {
		t.Errorf("coverage = %q, want %q", got, want)
	}
}

type genStep = fsmtest.Step[conn.GenState, conn.GenEvent]

// nextGen waits for the next step of a generation machine, skipping the
// other machines', as "from --event--> to".
func (r *connRun) nextGen() string {
	r.t.Helper()
	st := r.waitInner("generation", func(innerStep) bool { return true }, "a generation step")
	return st.from + " --" + st.event + "--> " + st.to
}

// TestCoverageGeneration drives the generation machine along every path:
// an attempt that fails with no process to wait for, one whose process
// outlives CloseTimeout, and a session that ends.
func TestCoverageGeneration(t *testing.T) {
	spec := conn.GenerationTable()
	c := fsmtest.Drive(t, spec, func(p fsmtest.Path[conn.GenState, conn.GenEvent]) []genStep {
		var took []genStep
		t.Run(p.String(), func(t *testing.T) {
			// The connection step the path's first generation needs.
			var first []connStep
			if p.Steps[0].Event == conn.GenClose {
				first = []connStep{{Event: conn.EventAttemptFailed}}
				if len(p.Steps) > 1 && p.Steps[1].Event == conn.GenExpire {
					first[0].When = "not released"
				}
			}
			r := newConnRun(t, coveragePolicy, first)
			for _, st := range p.Steps {
				switch st.Event {
				case conn.GenWentBad:
					r.srv.Crash()
				case conn.GenExpire:
					r.held = waitFor(t, r.srv.HeldTransports(), "the held transport")
					<-r.held.Terminated()
					r.clk.Add(conn.DefaultCloseTimeout)
				}
				r.waitInner("generation", func(got innerStep) bool {
					took = append(took, genStep{From: conn.GenState(got.from), Event: conn.GenEvent(got.event), When: got.when, To: conn.GenState(got.to)})
					return got.from == string(st.From) && got.event == string(st.Event) && got.to == string(st.To)
				}, fmt.Sprintf("%s --%s--> %s", st.From, st.Event, st.To))
			}
		})
		return took
	})
	coverageLine(c)
}
