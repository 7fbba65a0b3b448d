//lint:file-ignore SA1019 roots and sampling are deprecated upstream (SEP-2577) but still relayed, and tested.

package front

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayRig is a front with raw names over one backend "a" whose tool
// "progress" reports two steps under the token it got and answers with
// that token, and whose tool "ask" elicits a name and answers with it.
type relayRig struct {
	f     *Front
	bs    *fakeBackends
	srv   *conntest.Server
	asked atomic.Int32 // calls of "ask" the backend received
	// beforeAnswer, if set, runs in a client's elicitation handler.
	beforeAnswer func()
	logs         syncBuffer    // the front's
	url          string        // the front over Streamable HTTP
	arrived      chan struct{} // a value per call of "together"
	answers      chan string   // the content of each elicitation answer the backend received, as JSON
}

// newRelayRig supervises the backend on protocol (conn's default when
// empty), shared by every client.
func newRelayRig(t *testing.T, protocol string) *relayRig {
	return newRelayRigWith(t, relayOptions{protocol: protocol})
}

// relayOptions vary a relay rig.
type relayOptions struct {
	protocol  string      // the backend's; conn's default when empty
	perClient bool        // the backend is isolated per client, not shared
	clock     clock.Clock // the front's; the real clock when nil
	http      HTTPOptions // the front's, with testSubject as its Subject
	catalog   bool        // serve the backend's prompts too
	idle      time.Duration
	roots     []string // the shared instance's configured roots
	// bearer puts the front behind a bearer token rule whose tokens are
	// "subject,scope,...": callers of their own, with their scopes (see
	// asCaller).
	bearer bool
	tracer Tracer
	tools  ToolsOptions // the front's (search.go)
	limits ResultLimits // the front's (limits.go)
}

// newRelayRigWith is newRelayRig as o says.
func newRelayRigWith(t *testing.T, o relayOptions) *relayRig {
	t.Helper()
	protocol := o.protocol
	r := &relayRig{}
	reg := conn.NewRegistry()
	var cat *conn.Catalog
	if o.catalog {
		cat = conn.NewCatalog()
	}
	var sup *conn.Supervisor
	bs := newFakeBackends()
	f := New(Options{Registry: reg, Catalog: cat, Names: NamesRaw, Logger: slog.New(slog.NewTextHandler(&r.logs, nil)), Backends: bs,
		Clock: o.clock, InstanceIdle: o.idle, Tracer: o.tracer, Tools: o.tools, Limits: o.limits})
	srv := conntest.NewServer(conntest.Accept)
	srv.MCP.AddTool(&mcp.Tool{Name: "progress", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= 2; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(token)}}}, nil
		})
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
	arrived := make(chan struct{}, 16)
	srv.MCP.AddTool(&mcp.Tool{Name: "together", InputSchema: map[string]any{"type": "object"}},
		// Elicits once two calls are in flight.
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			arrived <- struct{}{}
			for len(arrived) < 2 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(res.Content["name"])}}}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.InputResponses == nil {
				r.asked.Add(1)
			}
			ask := &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}
			res, answered := req.Params.InputResponses["name"].(*mcp.ElicitResult)
			switch {
			case answered:
			case req.Session.InitializeParams().ProtocolVersion >= conn.DefaultProtocolVersion:
				// Multi round-trip: ask in the result, get the answer in the retry.
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": ask}}, nil
			default:
				var err error
				if res, err = req.Session.Elicit(ctx, ask); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ":" + fmt.Sprint(res.Content["name"])}}}, nil
		})
	// "defaults" elicits a name and a colour with a default, and answers
	// with what it was sent.
	srv.MCP.AddTool(&mcp.Tool{Name: "defaults", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{
					"name":  map[string]any{"type": "string"},
					"color": map[string]any{"type": "string", "default": "blue"}}}}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	// The backend records each elicitation answer as it came, before its
	// own SDK checks and completes it.
	r.answers = make(chan string, 16)
	srv.MCP.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if e, ok := res.(*mcp.ElicitResult); ok && err == nil {
				b, _ := json.Marshal(e.Content)
				r.answers <- string(b)
			}
			return res, err
		}
	})
	// "meta" answers with the _meta it got, as JSON.
	srv.MCP.AddTool(&mcp.Tool{Name: "meta", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	// The prompt "greeting" elicits a name and greets it.
	srv.MCP.AddPrompt(&mcp.Prompt{Name: "greeting"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
			Content: &mcp.TextContent{Text: "hello " + fmt.Sprint(res.Content["name"])}}}}, nil
	})
	rec := conntest.NewRecorder()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	var err error
	base := func() conn.Config {
		return conn.Config{Name: "a", Transport: srv.Transport(), Reconnect: &p, Clock: clock.NewMock(),
			Logger: rec.Logger(), ProtocolVersion: protocol}
	}
	shared := base()
	shared.Registry, shared.Catalog, shared.OnTransition = reg, cat, rec.OnTransition
	for _, uri := range o.roots {
		shared.Roots = append(shared.Roots, &mcp.Root{URI: uri})
	}
	f.Configure("a", &shared)
	sup, err = conn.Start(context.Background(), shared)
	if err != nil {
		t.Fatal(err)
	}
	bs.set("a", sup)
	bs.starter(base)
	if o.perClient {
		bs.perClient("a", base)
	}
	rec.Expect(t, limit, conn.Established)
	for cat != nil && len(cat.Prompts()) == 0 {
		select {
		case <-cat.Changed():
		case <-time.After(limit):
			t.Fatal("the backend's prompts were not listed")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Update() // the clients' first calls find the tools
	synced := make(chan struct{})
	go func() { defer close(synced); f.Sync(ctx) }()
	var h http.Handler
	if o.bearer {
		h = auth.RequireBearerToken(func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
			f := strings.Split(tok, ",")
			if f[0] == "" {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: f[0], Scopes: f[1:], Expiration: time.Now().Add(time.Hour)}, nil
		}, nil)(f.HTTPHandler(o.http))
	} else {
		o.http.Subject = testSubject
		h = f.HTTPHandler(o.http)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-synced
		_ = f.Close(context.Background())
		_ = sup.Close(context.Background())
		srv.Close()
	})
	r.f, r.bs, r.url, r.srv, r.arrived = f, bs, hs.URL, srv, arrived
	return r
}

// relayClient is a front client that answers elicitations with its
// name and records the progress it is sent.
type relayClient struct {
	sess     *mcp.ClientSession
	progress chan string
}

// connect connects a client over front ("http", without a GET stream,
// or "stdio", in memory) asking for protocol ("" for the SDK's default).
func (r *relayRig) connect(t *testing.T, front, name, protocol string, roots ...string) *relayClient {
	t.Helper()
	c := &relayClient{progress: make(chan string, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: name}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.beforeAnswer != nil {
				r.beforeAnswer()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.progress <- fmt.Sprintf("%v %v/%v %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message)
		},
	})
	for _, uri := range roots {
		client.AddRoots(&mcp.Root{URI: uri})
	}
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: r.url, DisableStandaloneSSE: true, HTTPClient: asSubject(name)}
	if front == "stdio" {
		ct, st := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); _ = r.f.Run(ctx, st) }()
		t.Cleanup(func() { cancel(); <-ran })
		tr = ct
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	sess, err := client.Connect(ctx, tr, opts)
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	c.sess = sess
	return c
}

func (c *relayClient) call(t *testing.T, tool string, meta mcp.Meta) string {
	t.Helper()
	return callText(t, c.sess, &mcp.CallToolParams{Meta: meta, Name: tool, Arguments: map[string]any{}})
}

// A backend's progress reaches the calling client under the client's own
// token, on the call's stream (the HTTP client has no GET stream), and
// the backend sees a token of the front's: two clients that pick the
// same token get only their own progress.
func TestProgressIsRelayedUnderTheClientsToken(t *testing.T) {
	r := newRelayRig(t, conn.ClassicProtocolVersion)
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
	bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion)
	for _, c := range []*relayClient{alice, bob} {
		got := c.call(t, "progress", mcp.Meta{"progressToken": "tok"})
		if !strings.HasPrefix(got, "mcpfsm-") {
			t.Errorf("the backend saw progress token %q, want one of the front's (mcpfsm-N)", got)
		}
		var steps []string
		for range 2 {
			steps = append(steps, recv(t, c.progress, "a progress notification"))
		}
		if diff := cmp.Diff([]string{"tok 1/2 step 1", "tok 2/2 step 2"}, steps); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
	}
	select {
	case p := <-alice.progress:
		t.Errorf("alice got more progress: %q", p)
	case p := <-bob.progress:
		t.Errorf("bob got more progress: %q", p)
	default:
	}
	// Without a token the backend gets none.
	if got := alice.call(t, "progress", nil); got != "<nil>" {
		t.Errorf("a call without a token reached the backend with token %q", got)
	}
}

// A backend's elicitation during a call reaches the client that made the
// call, over HTTP on the call's own stream (the client has no GET
// stream), with two clients connected; whatever era the backend speaks.
func TestElicitationReachesTheCaller(t *testing.T) {
	for _, backend := range []string{conn.ClassicProtocolVersion, conn.DefaultProtocolVersion} {
		t.Run(backend, func(t *testing.T) {
			r := newRelayRig(t, backend)
			alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion)
			bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion)
			if got := alice.call(t, "ask", nil); got != "accept:alice" {
				t.Errorf("alice's call = %q, want accept:alice", got)
			}
			if got := bob.call(t, "ask", nil); got != "accept:bob" {
				t.Errorf("bob's call = %q, want accept:bob", got)
			}
		})
	}
}

// A go-sdk client with default options negotiates 2026-07-28 with the
// front over stdio and over HTTP, and a backend's elicitation during its
// call reaches its handler (as an input request of the call's result,
// answered in the client's next round trip) and goes back to the
// backend, whether the backend speaks 2025-11-25 (it sends a request) or
// 2026-07-28 (it asks in its own result).
func TestModernClientGetsTheBackendsElicitation(t *testing.T) {
	for _, front := range []string{"stdio", "http"} {
		for _, backend := range []string{conn.ClassicProtocolVersion, conn.DefaultProtocolVersion} {
			t.Run(front+"/"+backend, func(t *testing.T) {
				r := newRelayRig(t, backend)
				alice := r.connect(t, front, "alice", "")
				if got := alice.sess.InitializeResult().ProtocolVersion; got != conn.DefaultProtocolVersion {
					t.Fatalf("negotiated %q, want %q", got, conn.DefaultProtocolVersion)
				}
				if got := alice.call(t, "ask", nil); got != "accept:alice" {
					t.Errorf("call = %q, want accept:alice", got)
				}
				if got := alice.call(t, "progress", nil); got != "<nil>" {
					t.Errorf("a call without input requests = %q", got)
				}
				if n := r.f.bridgesLeft(); n != 0 {
					t.Errorf("%d bridged calls left after the calls ended", n)
				}
			})
		}
	}
}

// Over HTTP a client's roots cannot be read at initialized (its GET
// stream, if it ever opens one, is not there yet): they are read on the
// stream of its first call, and the backend's roots/list during a call
// gets the calling client's, with two clients connected.
func TestRootsAreReadOverHTTPWithoutAGETStream(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	alice := r.connect(t, "http", "alice", conn.ClassicProtocolVersion, "file:///alice")
	bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion, "file:///bob")
	if got := alice.call(t, "roots", nil); got != "file:///alice" {
		t.Errorf("alice's call saw roots %q", got)
	}
	if got := bob.call(t, "roots", nil); got != "file:///bob" {
		t.Errorf("bob's call saw roots %q", got)
	}
}

// A classic backend's request says nothing of the call it is for: with
// two modern clients' calls in flight on it, it is refused (ErrNoPeer),
// and never sent to a third, idle client that happens to be the only
// session connected. (Once one call has ended on its refusal, the
// other's request may be its own client's.)
func TestAmbiguousRequestsAreRefusedNotGuessed(t *testing.T) {
	r := newRelayRig(t, conn.ClassicProtocolVersion)
	r.connect(t, "http", "bob", conn.ClassicProtocolVersion) // idle
	type answer struct{ client, text string }
	got := make(chan answer, 2)
	for _, name := range []string{"alice", "carol"} {
		c := r.connect(t, "http", name, "")
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "together", Arguments: map[string]any{}})
			if err != nil {
				got <- answer{name, err.Error()}
				return
			}
			got <- answer{name, res.Content[0].(*mcp.TextContent).Text}
		}()
	}
	refused := 0
	for range 2 {
		a := recv(t, got, "an answer")
		switch {
		case strings.Contains(a.text, "cannot tell which one"):
			refused++
		case a.text != a.client:
			t.Errorf("%s's call answered %q; want its own name or the refusal", a.client, a.text)
		}
	}
	if refused == 0 {
		t.Error("no request was refused although two calls were in flight")
	}
}

// A backend lost while its request is out to a modern client ends the
// bridged call as lost: the client is told the call may or may not have
// taken effect, and the call is not sent again.
func TestBridgedCallLostMidRequest(t *testing.T) {
	r := newRelayRig(t, conn.ClassicProtocolVersion)
	r.beforeAnswer = r.srv.Crash
	alice := r.connect(t, "http", "alice", "")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := alice.sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if want := "the connection ended during the call of tool \"ask\", which may or may not have taken effect"; !res.IsError || !strings.Contains(text, want) {
		t.Errorf("call answered %q (isError %v); want it to say %q", text, res.IsError, want)
	}
	if n := r.asked.Load(); n != 1 {
		t.Errorf("the backend got the call %d times, want 1: a lost call is never sent again", n)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "bridged call lost") {
		t.Errorf("the loss was not logged:\n%s", logs)
	}
}
