//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and tested.

package front

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectAnon connects a modern client named name that has no
// credential (the front's subject is "" for it, as for every such
// client), with roots, answering elicitations with its name.
func (r *relayRig) connectAnon(t *testing.T, name string, raw bool, roots ...string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
	}
	if raw {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name}, opts)
	for _, uri := range roots {
		c.AddRoots(&mcp.Root{URI: uri})
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, DisableStandaloneSSE: true, HTTPClient: asSubject("")}, nil)
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// A 2026-07-28 backend's input_required result reaches a modern client
// as the backend made it, under the backend's own key ("name", not one
// of the front's), and the client's next round trip reaches the backend
// with its answers under that key, whatever the backend's isolation.
func TestModernBackendsInputRequestsPassThrough(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.StatelessProtocolVersion, perClient: perClient})
		alice := r.connectRaw(t, "alice")
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("call ask: %+v, %v; want input_required", res, err)
		}
		if _, ok := res.InputRequests["name"]; !ok || len(res.InputRequests) != 1 {
			t.Fatalf("input requests %v; want the backend's one, under its key \"name\"", res.InputRequests)
		}
		if bridgedState(res.RequestState) {
			t.Errorf("requestState %q is the front's; want the backend's own", res.RequestState)
		}
		got, err := alice.CallTool(ctx, answer(res, "ask", "alice"))
		if err != nil {
			t.Fatal(err)
		}
		if text := got.Content[0].(*mcp.TextContent).Text; text != "accept:alice" {
			t.Errorf("the answered call = %q, want accept:alice", text)
		}
		if n := r.f.bridgesLeft(); n != 0 {
			t.Errorf("%d bridged calls left", n)
		}
	})
}

func bridgedState(s string) bool { return strings.HasPrefix(s, "mcpfsm-") }

// Two 2026-07-28 clients without credentials (one caller to the front)
// eliciting at once through one server each get their own answer.
func TestTwoAnonymousClientsElicitingAtOnce(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.StatelessProtocolVersion, perClient: perClient})
		type result struct{ client, text string }
		got := make(chan result, 2)
		start := make(chan struct{})
		for _, name := range []string{"alice", "carol"} {
			sess := r.connectAnon(t, name, false)
			go func() {
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				defer cancel()
				res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
				if err != nil {
					got <- result{name, err.Error()}
					return
				}
				got <- result{name, res.Content[0].(*mcp.TextContent).Text}
			}()
		}
		close(start)
		for range 2 {
			a := recv(t, got, "an answer")
			if a.text != "accept:"+a.client {
				t.Errorf("%s's call answered %q; want accept:%s", a.client, a.text, a.client)
			}
		}
	})
}

// A classic backend's request says nothing of the call it is for: two
// anonymous modern clients' calls in flight on their (one caller's)
// instance never get each other's answer; the request is refused.
func TestAnonymousClientsNeverGetEachOthersAnswer(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	type result struct{ client, text string }
	got := make(chan result, 2)
	for _, name := range []string{"alice", "carol"} {
		sess := r.connectAnon(t, name, false)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "together", Arguments: map[string]any{}})
			if err != nil {
				got <- result{name, err.Error()}
				return
			}
			got <- result{name, res.Content[0].(*mcp.TextContent).Text}
		}()
	}
	for range 2 {
		a := recv(t, got, "an answer")
		if a.text != a.client && !strings.Contains(a.text, "cannot tell which one") {
			t.Errorf("%s's call answered %q; want its own name or the refusal", a.client, a.text)
		}
	}
}

// A modern client's roots are asked every time the backend asks, of the
// client whose call it is: two anonymous clients (one caller to the
// front, so one instance) each get their own, never a list another
// gave before.
func TestRootsAreAskedPerRequest(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	alice := r.connectAnon(t, "alice", false, "file:///alice")
	bob := r.connectAnon(t, "bob", false, "file:///bob")
	for range 2 {
		for _, c := range []struct {
			sess *mcp.ClientSession
			want string
		}{{alice, "file:///alice"}, {bob, "file:///bob"}} {
			if got := callText(t, c.sess, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}}); got != c.want {
				t.Errorf("the backend saw roots %q during the call of the client with %s", got, c.want)
			}
		}
	}
	if n := len(r.bs.instances()); n != 1 {
		t.Errorf("%d instances for one caller, want 1", n)
	}
}

// postWith sends one 2026-07-28 request whose _meta declares caps (JSON)
// to url, and returns the HTTP status and the body.
func postWith(t *testing.T, url, method, name, params, caps string) (int, string) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	if params != "" {
		params += ","
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+meta+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// A request whose _meta declares only sampling never gets a classic
// backend's elicitation: the call ends with -32021 and HTTP 400, naming
// elicitation. The capabilities it declared reach the backend in the
// call's _meta. A client that declared only sampling gets none.
func TestDeclaredCapabilitiesAreEnforcedAndPassedOn(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	status, body := postWith(t, r.url, "tools/call", "ask", `"name":"ask","arguments":{}`, `{"sampling":{}}`)
	var resp struct {
		Error *struct {
			Code int `json:"code"`
			Data struct {
				Required map[string]any `json:"requiredCapabilities"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Error == nil || resp.Error.Code != mcp.CodeMissingRequiredClientCapabilities ||
		status != http.StatusBadRequest || resp.Error.Data.Required["elicitation"] == nil {
		t.Errorf("a sampling-only request of an eliciting tool answered %d %s; want 400 and code %d naming elicitation", status, body, mcp.CodeMissingRequiredClientCapabilities)
	}
	if strings.Contains(body, "input_required") {
		t.Errorf("the client got an input request it cannot answer: %s", body)
	}
	_, body = postWith(t, r.url, "tools/call", "meta", `"name":"meta","arguments":{}`, `{"sampling":{}}`)
	if !strings.Contains(body, `io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{}}`) {
		t.Errorf("the backend's _meta, as it answered: %s; want the request's client capabilities in it", body)
	}
}

// A backend's JSON-RPC error reaches the client as the server sent it:
// its code, message and data (here MissingRequiredClientCapabilities,
// whose data names what to declare), with the HTTP status the code
// calls for.
func TestBackendErrorKeepsItsData(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	// The shared instance re-lists on the change; the per-client one
	// starts at the first call and lists it.
	r.srv.MCP.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required",
				Data: json.RawMessage(`{"requiredCapabilities":{"sampling":{}}}`)}
		})
	eventually(t, "the shared instance's listing of needs_sampling", func() bool {
		_, ok := r.f.opts.Registry.Lookup(conn.PublicToolName("a", "needs_sampling"))
		return ok
	})
	status, body := postWith(t, r.url, "tools/call", "needs_sampling", `"name":"needs_sampling","arguments":{}`, `{}`)
	want := `"error":{"code":-32021,"message":"sampling required","data":{"requiredCapabilities":{"sampling":{}}}}`
	if status != http.StatusBadRequest || !strings.Contains(body, want) {
		t.Errorf("answered %d %s; want 400 and %s", status, body, want)
	}
}

// asks says what protocol an instance of cfg asks for.
func asks(cfg conn.Config) string {
	if cfg.ProtocolVersion == "" && cfg.PreferClassic {
		return "classic, stateless if refused"
	}
	return cfg.ProtocolVersion
}

// A client's own instance speaks the client's era to its server unless
// the configuration pins a version: classic for a stdio client or a
// 2025-11-25 session (a server may send it requests during a call, as it
// would alone) unless the server refuses it, conn's default for a
// 2026-07-28 client.
func TestOwnInstancesSpeakTheirClientsEra(t *testing.T) {
	f := New(Options{Registry: conn.NewRegistry(), Backends: newFakeBackends()})
	defer func() { _ = f.Close(context.Background()) }()
	const classic = "classic, stateless if refused"
	for _, tc := range []struct {
		kind   clientKind
		pinned string
		want   string
	}{
		{stdioClient, "", classic},
		{sessionClient, "", classic},
		{subjectClient, "", ""},
		{sessionClient, conn.StatelessProtocolVersion, conn.StatelessProtocolVersion},
	} {
		c := f.newClient(tc.kind, authz.Caller{})
		cfg := conn.Config{ProtocolVersion: tc.pinned}
		c.configure("a", &cfg, func(conn.Transition) {})
		if got := asks(cfg); got != tc.want {
			t.Errorf("client kind %d, pinned %q: the instance asks for %q, want %q", tc.kind, tc.pinned, got, tc.want)
		}
		c.close()
	}
}

// TestSharedInstancesSpeakTheClassicEra checks that a shared instance,
// which serves clients of both eras through one session, initializes at
// the classic era unless its configuration pins one: a server that sends
// its requests during a call (sampling, elicitation) would have them
// refused on a 2026-07-28 session, and the era bridge serves 2026-07-28
// clients from a classic backend. A server that refuses the classic
// handshake gets the stateless protocol (conn.Config.PreferClassic).
func TestSharedInstancesSpeakTheClassicEra(t *testing.T) {
	f := New(Options{Registry: conn.NewRegistry(), Backends: newFakeBackends()})
	defer func() { _ = f.Close(context.Background()) }()
	for _, tc := range []struct{ pinned, want string }{
		{"", "classic, stateless if refused"},
		{conn.StatelessProtocolVersion, conn.StatelessProtocolVersion},
	} {
		cfg := conn.Config{ProtocolVersion: tc.pinned}
		f.Configure("a", &cfg)
		if got := asks(cfg); got != tc.want {
			t.Errorf("pinned %q: the shared instance asks for %q, want %q", tc.pinned, got, tc.want)
		}
	}
}

// A backend that is itself an mcpfsm serve makes requestStates that look
// like the front's own bridged calls' ("mcpfsm-..."): they reach the
// client marked, and the client's next round trip reaches the backend
// with the state as the backend made it, instead of being refused as
// naming no call of the front's. So a serve in front of a serve works.
func TestServeBehindServeKeepsTheInnerState(t *testing.T) {
	const inner = "mcpfsm-0123456789abcdef"
	modes(t, func(t *testing.T, perClient bool) {
		r := newRelayRigWith(t, relayOptions{protocol: conn.StatelessProtocolVersion, perClient: perClient})
		r.srv.MCP.AddTool(&mcp.Tool{Name: "inner", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ans, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
				if !ok {
					return &mcp.CallToolResult{RequestState: inner, InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "name?",
						RequestedSchema: map[string]any{"type": "object"}}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.RequestState + " " + fmt.Sprint(ans.Content["name"])}}}, nil
			})
		eventually(t, "the shared instance's listing of inner", func() bool {
			_, ok := r.f.opts.Registry.Lookup(conn.PublicToolName("a", "inner"))
			return ok
		})
		alice := r.connectRaw(t, "alice")
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "inner", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("call inner: %+v, %v; want input_required", res, err)
		}
		got, err := alice.CallTool(ctx, answer(res, "inner", "alice"))
		if err != nil {
			t.Fatalf("round two, with requestState %q: %v", res.RequestState, err)
		}
		if text := got.Content[0].(*mcp.TextContent).Text; text != inner+" alice" {
			t.Errorf("round two reached the backend as %q, want %q", text, inner+" alice")
		}
	})
}
