//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and tested.

package front

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventually waits, at most limit, until cond holds: for an effect that
// another goroutine has in hand (a timer's callback, a call ending on
// the backend) and no event announces.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, limit)
		}
		runtime.Gosched()
	}
}

// connectRaw connects a modern client as subject name that does not run
// the round trips of a bridged call itself: it sees input_required. It
// declares no roots (go-sdk's client does by default), so the call that
// starts its instance is not asked for them first (askRoots).
func (r *relayRig) connectRaw(t *testing.T, name string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, DisableStandaloneSSE: true, HTTPClient: asSubject(name)}, nil)
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// asked calls tool as a raw modern client and returns the input_required
// result it gets.
func asked(t *testing.T, sess *mcp.ClientSession, tool string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if !res.NeedsInput() || res.RequestState == "" || len(res.InputRequests) == 0 {
		t.Fatalf("call %s: %+v, want input_required with a requestState", tool, res)
	}
	return res
}

// answer is the round trip that answers every input request of res with
// an accepted name.
func answer(res *mcp.CallToolResult, tool, name string) *mcp.CallToolParams {
	answers := mcp.InputResponseMap{}
	for id := range res.InputRequests {
		answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}
	}
	return &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: res.RequestState, InputResponses: answers}
}

func modes(t *testing.T, test func(t *testing.T, perClient bool)) {
	for _, perClient := range []bool{false, true} {
		name := "shared"
		if perClient {
			name = "per-client"
		}
		t.Run(name, func(t *testing.T) { test(t, perClient) })
	}
}

// Another client, with credentials of its own, cannot answer a client's
// elicitation or read its result with the requestState it learnt: its
// round trip is refused with an error that names nothing of the other
// call, and the call's own client still gets its answer through.
func TestReplayedRequestStateIsRefused(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: perClient})
		alice, mallory := r.connectRaw(t, "alice"), r.connectRaw(t, "mallory")
		res := asked(t, alice, "ask")
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		for _, tool := range []string{"ask", "progress"} {
			got, err := mallory.CallTool(ctx, answer(res, tool, "mallory"))
			if err == nil {
				t.Fatalf("mallory's %s with alice's requestState answered %+v; want it refused", tool, got)
			}
			for id := range res.InputRequests {
				if strings.Contains(err.Error(), fmt.Sprintf("%q", id)) || strings.Contains(err.Error(), res.RequestState) {
					t.Errorf("the refusal names alice's call (input %q, state %q): %v", id, res.RequestState, err)
				}
			}
		}
		if _, err := alice.CallTool(ctx, answer(res, "progress", "alice")); err == nil {
			t.Error("alice's requestState was taken for a call of another tool")
		}
		got, err := alice.CallTool(ctx, answer(res, "ask", "alice"))
		if err != nil {
			t.Fatalf("alice's own answer: %v", err)
		}
		if text := got.Content[0].(*mcp.TextContent).Text; text != "accept:alice" {
			t.Errorf("alice's call answered %q, want accept:alice", text)
		}
	})
}

// A client that abandons a round of a bridged call holds nothing of
// another client's: with a server of its own, the other's elicitation
// goes through at once; with a shared server, it does once the abandoned
// round expires, 30 seconds on.
func TestAbandonedRoundFreesTheServer(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		clk := clock.NewMock()
		r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: perClient, clock: clk})
		alice := r.connectRaw(t, "alice")
		abandoned := asked(t, alice, "ask")
		bob := r.connect(t, "http", "bob", "")
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if perClient {
			if err != nil || res.Content[0].(*mcp.TextContent).Text != "accept:bob" {
				t.Fatalf("bob's call beside alice's abandoned round: %+v, %v; want accept:bob", res, err)
			}
			return
		}
		if err == nil && !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "cannot tell") {
			t.Fatalf("bob's call on the shared server while alice's round is out answered %+v; want the refusal", res)
		}
		clk.Add(sharedInputWait)
		eventually(t, "the expiry of alice's abandoned round", func() bool { return r.f.bridgesLeft() == 0 })
		res, err = bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "accept:bob" {
			t.Fatalf("bob's call after alice's round expired: %+v, %v; want accept:bob", res, err)
		}
		_, err = alice.CallTool(ctx, answer(abandoned, "ask", "alice"))
		if err == nil || !strings.Contains(err.Error(), "requestState names no") {
			t.Errorf("alice's late answer: %v; want the call gone", err)
		}
	})
}

// Two clients whose calls elicit at once on a server each get their own
// answer, when the server is isolated per client.
func TestConcurrentElicitationsReachTheirOwnClients(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	type result struct{ client, text string }
	got := make(chan result, 2)
	for _, name := range []string{"alice", "carol"} {
		c := r.connect(t, "http", name, conn.ClassicProtocolVersion)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "together", Arguments: map[string]any{}})
			if err != nil {
				got <- result{name, err.Error()}
				return
			}
			got <- result{name, res.Content[0].(*mcp.TextContent).Text}
		}()
	}
	for range 2 {
		a := recv(t, got, "an answer")
		if a.text != a.client {
			t.Errorf("%s's call answered %q; want its own name", a.client, a.text)
		}
	}
	if n := len(r.bs.instances()); n != 2 {
		t.Errorf("%d instances started for two clients, want 2", n)
	}
}

// The answer a client gives to an elicitation reaches the backend as
// the client sent it: the front adds no defaults of the schema's, on
// either era of the client.
func TestElicitationAnswerReachesTheBackendAsSent(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: perClient})
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		// The SDK's client fills in defaults before it answers: this
		// classic client answers as a person would, with only what was
		// asked.
		c := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not reached: the middleware answers")
			}})
		c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "elicitation/create" {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "alice"}}, nil
				}
				return next(ctx, method, req)
			}
		})
		sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: asSubject("alice")},
			&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		if _, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "defaults", Arguments: map[string]any{}}); err != nil {
			t.Fatalf("classic call: %v", err)
		}
		if got := recv(t, r.answers, "the answer at the backend"); got != `{"name":"alice"}` {
			t.Errorf("classic client: the backend received %s, want {\"name\":\"alice\"} as the client sent it", got)
		}
		// A modern client answers in its next round trip.
		bob := r.connectRaw(t, "bob")
		res := asked(t, bob, "defaults")
		if _, err := bob.CallTool(ctx, answer(res, "defaults", "bob")); err != nil {
			t.Fatalf("modern call: %v", err)
		}
		if got := recv(t, r.answers, "the answer at the backend"); got != `{"name":"bob"}` {
			t.Errorf("modern client: the backend received %s, want {\"name\":\"bob\"} as the client sent it", got)
		}
	})
}

// A modern client's prompts/get that needs input is bridged like a
// tool call.
func TestPromptThatNeedsInputIsBridged(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: perClient, catalog: true})
		alice := r.connect(t, "http", "alice", "")
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := alice.sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greeting"})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Messages[0].Content.(*mcp.TextContent).Text; got != "hello alice" {
			t.Errorf("prompt = %q, want hello alice", got)
		}
	})
}

// A modern client's roots reach its own instance of a server: asked
// during its call, as an input request, the first time the server asks.
func TestModernClientsRootsReachItsInstance(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	alice := r.connect(t, "http", "alice", "", "file:///alice")
	bob := r.connect(t, "http", "bob", "", "file:///bob")
	for range 2 {
		if got := alice.call(t, "roots", nil); got != "file:///alice" {
			t.Errorf("alice's server saw roots %q", got)
		}
		if got := bob.call(t, "roots", nil); got != "file:///bob" {
			t.Errorf("bob's server saw roots %q", got)
		}
	}
}

// A shared server is offered the roots its configuration declares,
// never a client's.
func TestSharedServerGetsTheConfiguredRoots(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, roots: []string{"file:///srv/data"}})
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion, "file:///alice")
	bob := r.connect(t, "http", "bob", "", "file:///bob")
	if got := alice.call(t, "roots", nil); got != "file:///srv/data" {
		t.Errorf("during alice's call the shared server saw roots %q", got)
	}
	if got := bob.call(t, "roots", nil); got != "file:///srv/data" {
		t.Errorf("during bob's call the shared server saw roots %q", got)
	}
}

// A client's own instance ends with its session, whether the client
// deletes it or abandons it to the idle timeout.
func TestInstancesEndWithTheirSession(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true,
		http: HTTPOptions{SessionTimeout: 100 * time.Millisecond}})
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
	alice.call(t, "progress", nil)
	instances := r.bs.instances()
	if len(instances) != 1 {
		t.Fatalf("%d instances after alice's call, want 1", len(instances))
	}
	_ = alice.sess.Close() // DELETE
	recv(t, instances[0].Done(), "the end of alice's instance after DELETE")

	// Bob goes away without DELETE: his session expires, and with it his
	// instance.
	bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion)
	bob.call(t, "progress", nil)
	instances = r.bs.instances()
	if len(instances) != 2 {
		t.Fatalf("%d instances after bob's call, want 2", len(instances))
	}
	recv(t, instances[1].Done(), "the end of bob's instance after his session expired")
}

// A server's instances are bounded: a client's first request past the
// bound is a tool error naming it, and the slot of an ended client is
// free for the next.
func TestMaxInstances(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	r.bs.maxInstances("a", 1)
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
	if got := alice.call(t, "progress", nil); got != "<nil>" {
		t.Fatalf("alice's call = %q", got)
	}
	bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	want := `server "a": mcpfsm runs at most 1 instances of it at once, one per client (maxInstances); tool "progress" was not called; try again later`
	if !res.IsError || res.Content[0].(*mcp.TextContent).Text != want {
		t.Fatalf("bob's call past the bound: %+v; want the error %q", res, want)
	}
	instances := r.bs.instances()
	_ = alice.sess.Close()
	recv(t, instances[0].Done(), "the end of alice's instance")
	eventually(t, "the release of alice's slot", func() bool { _, n := r.f.slots.Counts(); return n["a"] == 0 })
	if got := bob.call(t, "progress", nil); got != "<nil>" {
		t.Fatalf("bob's call once alice's slot was free = %q", got)
	}
}

// An instance left idle for InstanceIdle is closed; the client's next
// request starts a new one, and sees the server as before.
func TestIdleInstancesClose(t *testing.T) {
	clk := clock.NewMock()
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true, clock: clk, idle: time.Minute})
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
	alice.call(t, "roots", nil)
	first := r.bs.instances()
	if len(first) != 1 {
		t.Fatalf("%d instances, want 1", len(first))
	}
	clk.Add(59 * time.Second)
	select {
	case <-first[0].Done():
		t.Fatal("the instance closed before its idle time")
	default:
	}
	clk.Add(time.Second)
	recv(t, first[0].Done(), "the end of the idle instance")
	alice.call(t, "roots", nil)
	if n := len(r.bs.instances()); n != 2 {
		t.Fatalf("%d instances after the call that followed the idle close, want 2", n)
	}
}

// The bound on sessions holds exactly under a burst of initializes, and
// a subject holds at most its share.
func TestSessionBoundsHoldExactly(t *testing.T) {
	_, url := httpFront(t, HTTPOptions{MaxSessions: 50, MaxSessionsPerSubject: 10, SessionTimeout: -1, Subject: testSubject})
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			sess, err := connectAs(t, url, fmt.Sprintf("user-%d", i%10))
			if err == nil {
				ok.Add(1)
				_ = sess
			}
		})
	}
	wg.Wait()
	if got := ok.Load(); got != 50 {
		t.Errorf("%d sessions opened by 200 initializes against MaxSessions 50, want exactly 50", got)
	}
	// One subject alone: at most 10.
	_, url = httpFront(t, HTTPOptions{MaxSessions: 50, MaxSessionsPerSubject: 10, SessionTimeout: -1, Subject: testSubject})
	n := 0
	for range 20 {
		if _, err := connectAs(t, url, "greedy"); err == nil {
			n++
		}
	}
	if n != 10 {
		t.Errorf("one subject opened %d sessions, want its share of 10", n)
	}
}

// connectAs opens a classic session as subject.
func connectAs(t *testing.T, url, subject string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: subject}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1, HTTPClient: asSubject(subject)},
		&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err == nil {
		t.Cleanup(func() { _ = sess.Close() })
	}
	return sess, err
}

// docs/design.md shows the per-client instance machine's current
// diagram.
func TestInstanceSpecAndItsDiagram(t *testing.T) {
	checkDocShows(t, "per-client instance", instance.Spec().Mermaid())
}

// Close ends every client at once, with the instances they hold.
func TestCloseEndsEveryClient(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion, "file:///alice")
	alice.call(t, "roots", nil)
	bob := r.connect(t, "http", "bob", "", "file:///bob")
	bob.call(t, "roots", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.f.Close(ctx); err != nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("Close: %v\n%s", err, buf[:runtime.Stack(buf, true)])
	}
	for _, sup := range r.bs.instances() {
		recv(t, sup.Done(), "the end of an instance")
	}
}

// A client's first call of a server during the server's outage is
// answered at once from the shared instance's state, and starts no
// instance that would only wait for the same server.
func TestFirstUseDuringAnOutageFailsFast(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	clk := clock.NewMock()
	r.bs.status = func(string) (conn.Status, bool) {
		return conn.Status{State: conn.LostReconnecting, Attempt: 2, MaxAttempts: 5, NextRetry: clk.Now().Add(time.Hour)}, true
	}
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := alice.sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(text, `server "a": connection lost; reconnecting in`) {
		t.Fatalf("a first call during the outage: %q (error %v)", text, res.IsError)
	}
	if n := len(r.bs.instances()); n != 0 {
		t.Fatalf("%d instances started during the outage", n)
	}
}

// A client's first call of a server whose shared instance is still on
// its first attempt (connecting, as an npx server is for seconds after
// serve starts) is no outage: it starts the client's instance and waits
// for it, bounded by the call's deadline, instead of failing at once.
func TestFirstUseWhileTheServerStartsWaits(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	r.bs.status = func(string) (conn.Status, bool) {
		return conn.Status{State: conn.Connecting, Attempt: 1, MaxAttempts: 5}, true
	}
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := alice.sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("a first call while the server starts: %q, want its result", res.Content[0].(*mcp.TextContent).Text)
	}
	if n := len(r.bs.instances()); n != 1 {
		t.Fatalf("%d instances started, want alice's", n)
	}
}
