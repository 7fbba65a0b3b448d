package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asCaller is an HTTP client of a bearer rig as subject with scopes.
func asCaller(subject string, scopes ...string) *http.Client {
	return &http.Client{Transport: bearerTransport{strings.Join(append([]string{subject}, scopes...), ",")}}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// rulesClient is a client of a bearer rig that counts the tool list
// changes it is told of.
type rulesClient struct {
	sess    *mcp.ClientSession
	changes atomic.Int32
	changed chan struct{}
}

func (r *relayRig) connectCaller(t *testing.T, protocol, subject string, scopes ...string) *rulesClient {
	t.Helper()
	p := &rulesClient{changed: make(chan struct{}, 16)}
	c := mcp.NewClient(&mcp.Implementation{Name: subject}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			p.changes.Add(1)
			p.changed <- struct{}{}
		},
	})
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: asCaller(subject, scopes...)}, opts)
	if err != nil {
		t.Fatalf("%s: connect: %v", subject, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	p.sess = sess
	return p
}

func (p *rulesClient) tools(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := p.sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func mustRules(t *testing.T, allow []string, tools ...authz.ToolScope) *authz.Rules {
	t.Helper()
	r, err := authz.NewRules("a", allow, tools)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var allTools = []string{"ask", "defaults", "meta", "progress", "roots", "together"}

// Each caller sees the tools its scopes allow, on either era and either
// isolation, and a call of one it does not is refused naming the scope
// it lacks, and nothing of what others see.
func TestScopesDecideWhatEachCallerSees(t *testing.T) {
	modes(t, func(t *testing.T, perClient bool) {
		for _, protocol := range []string{conn.ClassicProtocolVersion, ""} {
			r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: perClient, bearer: true})
			r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"}, authz.ToolScope{Pattern: "ask", Scopes: []string{"a:ask"}})})
			alice := r.connectCaller(t, protocol, "alice", "a:use", "a:ask")
			bob := r.connectCaller(t, protocol, "bob", "a:use")
			carol := r.connectCaller(t, protocol, "carol")
			if diff := cmp.Diff(allTools, alice.tools(t)); diff != "" {
				t.Errorf("alice's tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(slices.DeleteFunc(slices.Clone(allTools), func(s string) bool { return s == "ask" }), bob.tools(t)); diff != "" {
				t.Errorf("bob's tools (-want +got):\n%s", diff)
			}
			if got := carol.tools(t); len(got) != 0 {
				t.Errorf("carol, without scopes, sees %v", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			_, err := bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
			var wire *jsonrpc.Error
			if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams || !strings.Contains(wire.Message, `"a:ask"`) {
				t.Errorf("bob's call of ask: %v; want an invalid-params refusal naming a:ask", err)
			}
			_, err = carol.sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
			if err == nil || !strings.Contains(err.Error(), `"a:use"`) || strings.Contains(err.Error(), "alice") {
				t.Errorf("carol's call of progress: %v; want a refusal naming a:use only", err)
			}
			res, err := bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Errorf("bob's call of a tool he may use: %+v, %v", res, err)
			}
			cancel()
		}
	})
}

// A change of the rules reaches the clients it changes, with a
// list_changed to those alone.
func TestAReloadedRuleNotifiesTheClientsItChanges(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true})
	r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"}, authz.ToolScope{Pattern: "ask", Scopes: []string{"a:ask"}})})
	alice := r.connectCaller(t, conn.ClassicProtocolVersion, "alice", "a:use", "a:ask")
	bob := r.connectCaller(t, conn.ClassicProtocolVersion, "bob", "a:use")
	if slices.Contains(bob.tools(t), "ask") {
		t.Fatal("bob sees ask before the change")
	}
	r.bs.setGuard("a", authz.Guard{Rules: mustRules(t, []string{"a:use"})})
	r.f.Update()
	recv(t, bob.changed, "bob's list_changed")
	if !slices.Contains(bob.tools(t), "ask") {
		t.Error("bob does not see ask after the rule that hid it went")
	}
	// A round trip of alice's after bob heard: alice's view did not
	// change, and her server sent nothing.
	alice.tools(t)
	if n := alice.changes.Load(); n != 0 {
		t.Errorf("alice, whose tools did not change, got %d list_changed", n)
	}
}

// A caller's calls past the server's rate are answered at once with an
// error naming the limit and when it frees; another caller is counted
// apart, and the allowance comes back with time.
func TestRateLimitPerCaller(t *testing.T) {
	clk := clock.NewMock()
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true, perClient: true})
	rate, err := authz.ParseRate("5/s")
	if err != nil {
		t.Fatal(err)
	}
	r.bs.setGuard("a", authz.Guard{Limiter: authz.NewLimiter("a", rate, clk)})
	alice := r.connectCaller(t, conn.ClassicProtocolVersion, "alice")
	bob := r.connectCaller(t, conn.ClassicProtocolVersion, "bob")
	call := func(p *rulesClient) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		res, err := p.sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	for i := range 5 {
		if text, isErr := call(alice); isErr {
			t.Fatalf("alice's call %d within the burst: %q", i+1, text)
		}
	}
	text, isErr := call(alice)
	if !isErr || !strings.Contains(text, "5/s") || !strings.Contains(text, "try again in") {
		t.Fatalf("alice's sixth call: %q (error %v); want the limit and when it frees", text, isErr)
	}
	if text, isErr := call(bob); isErr {
		t.Fatalf("bob's first call while alice is limited: %q", text)
	}
	clk.Add(time.Second)
	if text, isErr := call(alice); isErr {
		t.Fatalf("alice's call a second later: %q", text)
	}
}

// The client's trace context reaches the backend in the call's _meta
// when the front does not trace; when it does, the backend gets the
// call span's, and the spans of the request and the call are made.
func TestTraceContextCrossesTheFront(t *testing.T) {
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, traced := range []bool{false, true} {
		var tr *fakeTracer
		o := relayOptions{protocol: conn.ClassicProtocolVersion}
		if traced {
			tr = &fakeTracer{}
			o.tracer = tr
		}
		r := newRelayRigWith(t, o)
		alice := r.connect(t, "http", "alice", "")
		got := alice.call(t, "meta", mcp.Meta{"traceparent": parent, "other": "x"})
		var meta map[string]any
		if err := json.Unmarshal([]byte(got), &meta); err != nil {
			t.Fatalf("the backend's _meta %q: %v", got, err)
		}
		want := parent
		if traced {
			want = "from-the-call-span"
		}
		if meta["traceparent"] != want || meta["other"] != nil {
			t.Errorf("traced %v: the backend got _meta %v; want traceparent %q and nothing else of the client's", traced, meta, want)
		}
		if traced {
			if diff := cmp.Diff([]string{"request tools/call meta " + parent, "call a tools/call meta", "end call ok", "end request ok"}, tr.events()); diff != "" {
				t.Errorf("spans (-want +got):\n%s", diff)
			}
		}
	}
}

// fakeTracer records the spans a front makes.
type fakeTracer struct {
	mu  sync.Mutex
	log []string
}

func (f *fakeTracer) add(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
}

func (f *fakeTracer) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.log), func(s string) bool {
		return !strings.Contains(s, "tools/call") && !strings.HasPrefix(s, "end")
	})
}

type spanKey struct{}

func (f *fakeTracer) Request(ctx context.Context, method, name, session, server string, meta map[string]any, _ http.Header) (context.Context, func(string, error)) {
	if method != "tools/call" {
		return ctx, func(string, error) {}
	}
	tp, _ := meta["traceparent"].(string)
	f.add("request " + method + " " + name + " " + tp)
	return ctx, func(outcome string, _ error) { f.add("end request " + outcome) }
}

func (f *fakeTracer) Call(ctx context.Context, server, method, name string) (context.Context, func(string, error)) {
	f.add("call " + server + " " + method + " " + name)
	return context.WithValue(ctx, spanKey{}, true), func(outcome string, _ error) { f.add("end call " + outcome) }
}

func (f *fakeTracer) Propagate(ctx context.Context, set func(key, value string)) {
	if ctx.Value(spanKey{}) != nil {
		set("traceparent", "from-the-call-span")
	}
}

// The static token's holder is the operator; an OAuth token is never the
// operator, whatever its subject; no credential is nobody.
func TestTokenCaller(t *testing.T) {
	if got := tokenCaller(nil); !cmp.Equal(got, authz.Caller{}) {
		t.Errorf("tokenCaller(nil) = %+v", got)
	}
	forged := tokenCaller(&auth.TokenInfo{UserID: access.SubjectToken, Scopes: []string{"x"}})
	if forged.Operator {
		t.Error("a TokenInfo whose subject is \"token\" is the operator")
	}
	if got := tokenCaller(&auth.TokenInfo{UserID: "alice", Scopes: []string{"a", "b"}}); !cmp.Equal(got, authz.Caller{Subject: "alice", Scopes: []string{"a", "b"}}) {
		t.Errorf("tokenCaller = %+v", got)
	}
}
