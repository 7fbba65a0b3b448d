//lint:file-ignore SA1019 roots and logging are deprecated upstream (SEP-2577) but still relayed, and tested.

package front

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpPeer is one client of a front served over Streamable HTTP.
type httpPeer struct {
	sess *mcp.ClientSession
	logs chan string
}

// isolationRig is a front over one backend "a" served over Streamable
// HTTP. The backend's tool "roots" answers with the roots the calling
// client offers it; "say" logs its argument on the session of the call.
type isolationRig struct {
	url string
	sup *conn.Supervisor
	bs  *fakeBackends
}

func newIsolationRig(t *testing.T, perClient bool) *isolationRig {
	t.Helper()
	return newIsolationRigWith(t, perClient, nil)
}

// newIsolationRigWith is newIsolationRig whose front's Options callers
// sets, if set; its backends then start instances of "a" whatever its
// isolation.
func newIsolationRigWith(t *testing.T, perClient bool, callers func(*Options)) *isolationRig {
	t.Helper()
	reg := conn.NewRegistry()
	var sup *conn.Supervisor
	bs := newFakeBackends()
	opts := Options{Registry: reg, Backends: bs}
	if callers != nil {
		callers(&opts)
	}
	f := New(opts)
	srv := conntest.NewServer(conntest.Accept)
	srv.MCP.AddTool(&mcp.Tool{Name: "roots", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(uris, ",")}}}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "say", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: string(req.Params.Arguments)}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said"}}}, nil
		})
	rec := conntest.NewRecorder()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	var err error
	base := func() conn.Config {
		return conn.Config{Name: "a", Transport: srv.Transport(), Reconnect: &p, Clock: clock.NewMock(), Logger: rec.Logger(),
			// Server-to-client requests during a call: protocol 2025-11-25.
			ProtocolVersion: conn.ClassicProtocolVersion}
	}
	shared := base()
	shared.Registry, shared.OnTransition = reg, rec.OnTransition
	f.Configure("a", &shared)
	sup, err = conn.Start(context.Background(), shared)
	if err != nil {
		t.Fatal(err)
	}
	bs.set("a", sup)
	if perClient {
		bs.perClient("a", base)
	} else if callers != nil {
		bs.starter(base)
	}
	rec.Expect(t, limit, conn.Established)
	ctx, cancel := context.WithCancel(context.Background())
	f.Update() // the clients' first calls find the tools
	synced := make(chan struct{})
	go func() { defer close(synced); f.Sync(ctx) }()
	hs := httptest.NewServer(f.HTTPHandler(HTTPOptions{Subject: testSubject}))
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-synced
		_ = f.Close(context.Background())
		_ = sup.Close(context.Background())
		srv.Close()
	})
	return &isolationRig{url: hs.URL, sup: sup, bs: bs}
}

// connect connects a client offering roots, which records the log
// messages it receives.
func (r *isolationRig) connect(t *testing.T, name string, roots ...string) *httpPeer {
	t.Helper()
	p, _ := r.connectClient(t, name, roots...)
	return p
}

// connectClient is connect, and the client, whose roots a test changes.
func (r *isolationRig) connectClient(t *testing.T, name string, roots ...string) (*httpPeer, *mcp.Client) {
	t.Helper()
	p := &httpPeer{logs: make(chan string, 16)}
	c := mcp.NewClient(&mcp.Implementation{Name: name}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			p.logs <- fmt.Sprint(req.Params.Data)
		},
	})
	for _, uri := range roots {
		c.AddRoots(&mcp.Root{URI: uri})
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: asSubject(name)},
		// Sessions, roots and logging/setLevel: protocol 2025-11-25.
		&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	p.sess = sess
	return p, c
}

func (p *httpPeer) call(t *testing.T, tool string, args any) string {
	t.Helper()
	return callText(t, p.sess, &mcp.CallToolParams{Name: "mcp__a__" + tool, Arguments: args})
}

// callText calls a tool on sess and returns the text of its result,
// failing t on an error or a tool error.
func callText(t *testing.T, sess *mcp.ClientSession, params *mcp.CallToolParams) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("call %s: %v", params.Name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("call %s: tool error %q", params.Name, texts)
	}
	return strings.Join(texts, "")
}

// A backend isolated per client gets its own client's roots: alice's
// server never sees mallory's, whoever connected (or changed roots) last.
func TestRootsAreTheCallingClients(t *testing.T) {
	r := newIsolationRig(t, true)
	alice := r.connect(t, "alice", "file:///home/alice")
	mallory := r.connect(t, "mallory", "file:///")
	// Each client's roots are read once it is initialized, off the SDK's
	// goroutine: until then a call finds none. Each round trip waits.
	deadline := time.Now().Add(limit)
	for _, want := range []struct {
		p    *httpPeer
		uris string
	}{{alice, "file:///home/alice"}, {mallory, "file:///"}} {
		for {
			got := want.p.call(t, "roots", nil)
			if got == want.uris {
				break
			}
			if got != "" || time.Now().After(deadline) {
				t.Fatalf("the server saw roots %q during a call of the client offering %q", got, want.uris)
			}
		}
	}
	if got := alice.call(t, "roots", nil); got != "file:///home/alice" {
		t.Fatalf("after mallory connected, alice's server saw roots %q", got)
	}
	// With two clients, no client's roots are the supervisor's own, where a
	// request outside any call would read them.
	if roots := r.sup.Roots(); len(roots) != 0 {
		t.Fatalf("the supervisor holds roots %v of one of two clients", roots)
	}
}

// A client's roots that change while its instance starts reach the
// instance, and neither waits for the other: the roots are read with the
// client's lock held, and an instance starts with its own lock held and
// takes the client's roots.
func TestRootsChangeWhileAnInstanceStarts(t *testing.T) {
	r := newIsolationRig(t, true)
	start := r.bs.start
	entered := make(chan struct{})
	r.bs.start = func(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error) {
		close(entered)
		// The start goes on once the roots read waits for the instance.
		deadline := time.Now().Add(limit)
		for !goroutineIn("front.(*roots).read", "instance.(*Instance).Running") {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("no roots read waited for the instance within %v", limit)
			}
			runtime.Gosched()
		}
		return start(ctx, server, configure)
	}
	p, c := r.connectClient(t, "alice", "file:///home/alice")
	called := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := p.sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__a__roots"})
		switch {
		case err != nil:
			called <- err.Error()
		case res.IsError:
			called <- fmt.Sprint("tool error: ", res.Content)
		default:
			called <- res.Content[0].(*mcp.TextContent).Text
		}
	}()
	select {
	case <-entered:
	case <-time.After(limit):
		t.Fatal("the call started no instance")
	}
	c.AddRoots(&mcp.Root{URI: "file:///home/alice/new"}) // the front reads them again
	select {
	case got := <-called:
		if got != "file:///home/alice,file:///home/alice/new" {
			t.Errorf("the instance saw roots %q, want both of alice's", got)
		}
	case <-time.After(2 * limit):
		t.Fatal("the call did not return: the roots read and the instance's start wait for each other")
	}
}

// goroutineIn reports whether a goroutine's stack holds every one of
// funcs.
func goroutineIn(funcs ...string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		all := true
		for _, f := range funcs {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}

// A log message sent during one client's call reaches that client only,
// and one client's logging level never changes what another receives.
func TestLogsAreTheCallingClients(t *testing.T) {
	for _, perClient := range []bool{false, true} {
		t.Run(fmt.Sprintf("perClient=%v", perClient), func(t *testing.T) { testLogsAreTheCallingClients(t, perClient) })
	}
}

func testLogsAreTheCallingClients(t *testing.T, perClient bool) {
	r := newIsolationRig(t, perClient)
	alice := r.connect(t, "alice")
	mallory := r.connect(t, "mallory")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := alice.sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := mallory.sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	// Mallory then silences everything but emergencies, for herself only.
	if err := mallory.sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "emergency"}); err != nil {
		t.Fatal(err)
	}
	// The front sends the level to the server off its goroutine: until the
	// server has debug, a warning may still be dropped there. Each round
	// says a new word; the first that reaches alice ends the wait.
	var got string
	for i := 0; got == ""; i++ {
		word := fmt.Sprintf(`{"secret":"alice-%d"}`, i)
		alice.call(t, "say", map[string]any{"secret": fmt.Sprintf("alice-%d", i)})
		select {
		case got = <-alice.logs:
			if got != word {
				t.Fatalf("alice received %q, want %q", got, word)
			}
		case <-time.After(100 * time.Millisecond):
			if i > 50 {
				t.Fatal("alice never received the log message of her own call at level debug")
			}
		}
	}
	// Mallory's own call's log goes to nobody else either: her level drops
	// it, and alice must not receive it.
	mallory.call(t, "say", map[string]any{"secret": "mallory"})
	mallory.call(t, "roots", nil) // a round trip after the log message
	select {
	case m := <-alice.logs:
		t.Fatalf("alice received %q, a log message of mallory's call", m)
	default:
	}
	select {
	case m := <-mallory.logs:
		if strings.Contains(m, "alice") {
			t.Fatalf("mallory received alice's log message %q", m)
		}
		t.Fatalf("mallory received %q below her own level", m)
	default:
	}
}
