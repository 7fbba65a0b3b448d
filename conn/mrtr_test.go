//lint:file-ignore SA1019 sampling and roots are deprecated upstream (SEP-2577) but still served; these tests answer them.

package conn_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host with every handler set (elicitation, sampling, roots) still
// speaks 2026-07-28 to a server that does, and answers the server's
// input_required results (SEP-2322) through those handlers.

// wireRequest is one JSON-RPC request a scripted server received over
// HTTP, as it came.
type wireRequest struct {
	Method      string
	ID          string // the raw JSON of the id
	Name        string // params.name (tools/call, prompts/get)
	State       *string
	Answers     []string // the keys of params.inputResponses, sorted
	MetaVersion string   // params._meta's protocol version
	Header      http.Header
}

// mrtrServer is a scripted 2026-07-28 server: go-sdk's stateless
// Streamable HTTP handler on loopback, whose tools ask for input with
// input_required results and keep what they learnt in requestState. It
// records every POST, and lists one more tool whose header declaration
// is invalid (an x-mcp-header on an object), which a client must drop.
type mrtrServer struct {
	*httptest.Server
	client *http.Client

	mu   sync.Mutex
	seen []wireRequest
}

func newMRTRServer(t *testing.T) *mrtrServer {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "mrtr"}, nil)
	str := func(s string) map[string]any { return map[string]any{"type": "string", "default": s} }
	ask := func(msg string, prop string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Message: msg, RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{prop: map[string]any{"type": "string"}}}}
	}
	accepted := func(in mcp.InputResponseMap, key, prop string) (string, bool) {
		r, ok := in[key].(*mcp.ElicitResult)
		if !ok || r.Action != "accept" {
			return "", false
		}
		s, ok := r.Content[prop].(string)
		return s, ok
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := map[string]any{"type": "object"}
	// one: a round of one request.
	server.AddTool(&mcp.Tool{Name: "one", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if name, ok := accepted(req.Params.InputResponses, "who", "name"); ok && req.Params.RequestState == "asked-who" {
			return text("hello " + name), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": ask("who?", "name")}, RequestState: "asked-who"}, nil
	})
	// three: one round of three requests, one of each kind.
	server.AddTool(&mcp.Tool{Name: "three", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in := req.Params.InputResponses
		name, okName := accepted(in, "name", "name")
		sample, okSample := in["greeting"].(*mcp.CreateMessageWithToolsResult)
		roots, okRoots := in["roots"].(*mcp.ListRootsResult)
		if okName && okSample && okRoots && req.Params.RequestState == "three" {
			var greeting, uris []string
			for _, c := range sample.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					greeting = append(greeting, tc.Text)
				}
			}
			for _, r := range roots.Roots {
				uris = append(uris, r.URI)
			}
			return text(fmt.Sprintf("%s|%s|%s", name, strings.Join(greeting, " "), strings.Join(uris, ","))), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"name": ask("name?", "name"),
			"greeting": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "greet"}}}},
			"roots": &mcp.ListRootsParams{},
		}, RequestState: "three"}, nil
	})
	// two: two rounds; the second's requestState carries the first's answer.
	server.AddTool(&mcp.Tool{Name: "two", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, state := req.Params.InputResponses, req.Params.RequestState
		if name, ok := accepted(in, "step1", "name"); ok && state == "round=1" {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step2": ask("color?", "color")}, RequestState: "round=2;name=" + name}, nil
		}
		if color, ok := accepted(in, "step2", "color"); ok && strings.HasPrefix(state, "round=2;name=") {
			return text(strings.TrimPrefix(state, "round=2;name=") + " likes " + color), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step1": ask("name?", "name")}, RequestState: "round=1"}, nil
	})
	// region: a designated parameter, sent in the Mcp-Param-Region header.
	server.AddTool(&mcp.Tool{Name: "region", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"}, "other": str("x")}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	// The go-sdk server refuses to add a tool with an invalid header
	// declaration: list one anyway, as a hostile or buggy server would.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				l.Tools = append(l.Tools, &mcp.Tool{Name: "bad-header", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
					"where": map[string]any{"type": "object", "x-mcp-header": "Where"}}}})
			}
			return res, err
		}
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	s := &mrtrServer{client: &http.Client{Transport: &http.Transport{}}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.record(body, r.Header.Clone())
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		s.Server.Close()
	})
	return s
}

func (s *mrtrServer) record(body []byte, h http.Header) {
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name           string                     `json:"name"`
			RequestState   *string                    `json:"requestState"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			Meta           map[string]any             `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return
	}
	w := wireRequest{Method: msg.Method, ID: string(msg.ID), Name: msg.Params.Name, State: msg.Params.RequestState, Header: h}
	for k := range msg.Params.InputResponses {
		w.Answers = append(w.Answers, k)
	}
	slices.Sort(w.Answers)
	w.MetaVersion, _ = msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	s.mu.Lock()
	s.seen = append(s.seen, w)
	s.mu.Unlock()
}

// requests returns what the server received so far.
func (s *mrtrServer) requests() []wireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// calls returns the server's tools/call requests of tool, in order.
func (s *mrtrServer) calls(tool string) []wireRequest {
	var out []wireRequest
	for _, w := range s.requests() {
		if w.Method == "tools/call" && w.Name == tool {
			out = append(out, w)
		}
	}
	return out
}

// answeringHost starts a supervisor of srv with every handler a host can
// have: an elicitation handler that answers by the question, a sampling
// handler and roots. It records which handlers ran.
func answeringHost(t *testing.T, srv *mrtrServer, logger *slog.Logger) (*conn.Supervisor, *conn.ToolRegistry, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	note := func(s string) { mu.Lock(); asked = append(asked, s); mu.Unlock() }
	answers := map[string]map[string]any{"who?": {"name": "ada"}, "name?": {"name": "ada"}, "color?": {"color": "green"}}
	tr := conn.Streamable(srv.URL)
	tr.Client = srv.client
	reg := conn.NewRegistry()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "m", Transport: tr, Registry: reg, FailOnStartupError: true, Clock: clock.NewMock(), Logger: logger,
		Roots: []*mcp.Root{{URI: "file:///project"}},
		Client: &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				note("elicit " + req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: answers[req.Params.Message]}, nil
			},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				note("sample")
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
			},
		},
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sup.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sup, reg, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(asked) }
}

func resultOf(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("call: result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call: content %T", res.Content[0])
	}
	return tc.Text
}

// round is what the server asked in one round of a call, and the
// requestState it gave with it; a call's rounds end with its answer.
type round struct {
	keys  []string
	state string
}

// checkRounds checks a call's requests as the server received them: the
// first with no answers and no requestState; each retry with a new
// JSON-RPC id, answering every request of the round before under the
// server's keys and echoing its requestState exactly.
func checkRounds(t *testing.T, srv *mrtrServer, tool string, rounds []round) {
	t.Helper()
	got := srv.calls(tool)
	if len(got) != len(rounds)+1 {
		t.Fatalf("%s: the server got %d tools/call requests, want %d (one per round and the last)", tool, len(got), len(rounds)+1)
	}
	ids := map[string]bool{}
	for i, w := range got {
		if ids[w.ID] {
			t.Errorf("%s: request %d reuses JSON-RPC id %s", tool, i, w.ID)
		}
		ids[w.ID] = true
		if i == 0 {
			if w.State != nil || len(w.Answers) != 0 {
				t.Errorf("%s: the first request has requestState %v and answers %v, want neither", tool, w.State, w.Answers)
			}
			continue
		}
		want := rounds[i-1]
		if w.State == nil || *w.State != want.state {
			t.Errorf("%s: request %d has requestState %v, want %q", tool, i, w.State, want.state)
		}
		if diff := cmp.Diff(want.keys, w.Answers); diff != "" {
			t.Errorf("%s: request %d answers (-want +got):\n%s", tool, i, diff)
		}
	}
}

// The round shapes: one request, three at once (one of each kind), and
// two rounds; each answered through the host's handlers on 2026-07-28.
func TestInputRequiredRoundsAreAnsweredOnTheNewProtocol(t *testing.T) {
	srv := newMRTRServer(t)
	sup, reg, asked := answeringHost(t, srv, quiet())
	if got := sup.Status().Protocol; got != conn.StatelessProtocolVersion {
		t.Fatalf("negotiated protocol %q, want %s: a host with handlers must not be sent back to the classic era", got, conn.StatelessProtocolVersion)
	}
	ctx := context.Background()
	call := func(tool string) string {
		res, err := reg.Call(ctx, conn.PublicToolName("m", tool), map[string]any{})
		return resultOf(t, res, err)
	}

	t.Run("one", func(t *testing.T) {
		if got := call("one"); got != "hello ada" {
			t.Errorf("result %q, want %q", got, "hello ada")
		}
		checkRounds(t, srv, "one", []round{{[]string{"who"}, "asked-who"}})
	})
	t.Run("three", func(t *testing.T) {
		before := len(asked())
		if got, want := call("three"), "ada|hi|file:///project"; got != want {
			t.Errorf("result %q, want %q", got, want)
		}
		checkRounds(t, srv, "three", []round{{[]string{"greeting", "name", "roots"}, "three"}})
		ran := asked()[before:]
		slices.Sort(ran)
		if diff := cmp.Diff([]string{"elicit name?", "sample"}, ran); diff != "" {
			t.Errorf("handlers run (-want +got; roots come from Config.Roots):\n%s", diff)
		}
	})
	t.Run("two", func(t *testing.T) {
		if got := call("two"); got != "ada likes green" {
			t.Errorf("result %q, want %q", got, "ada likes green")
		}
		checkRounds(t, srv, "two", []round{{[]string{"step1"}, "round=1"}, {[]string{"step2"}, "round=2;name=ada"}})
	})
}

// Every request conn sends on 2026-07-28 carries the protocol version in
// its header and _meta, and the standard headers: Mcp-Method, Mcp-Name for
// a named one, Mcp-Param-* for a tool's designated parameters (base64
// where the value needs it). A tool whose header declarations are invalid
// is dropped from the list with a log line.
func TestStandardHeadersAndInvalidToolHeaders(t *testing.T) {
	srv := newMRTRServer(t)
	rec := conntest.NewRecorder()
	_, reg, _ := answeringHost(t, srv, rec.Logger())
	ctx := context.Background()

	for _, tl := range reg.Tools() {
		if tl.Raw.Name == "bad-header" {
			t.Errorf("tool bad-header, whose x-mcp-header is on an object, was registered")
		}
	}
	rec.WaitLog(t, waitLimit, slog.LevelError, "excluding tool from tools/list")
	for _, r := range rec.Records(slog.LevelError) {
		if r.Msg == "excluding tool from tools/list" && (r.Attrs["tool"] != "bad-header" || r.Attrs["server"] != "m") {
			t.Errorf("log line %+v: want the tool bad-header and the server m named", r)
		}
	}

	for _, region := range []string{"us-west1", "Zürich", " padded "} {
		if _, err := reg.Call(ctx, conn.PublicToolName("m", "region"), map[string]any{"region": region}); err != nil {
			t.Fatalf("region %q: %v", region, err)
		}
	}
	calls := srv.calls("region")
	want := []string{"us-west1", "=?base64?" + base64.StdEncoding.EncodeToString([]byte("Zürich")) + "?=",
		"=?base64?" + base64.StdEncoding.EncodeToString([]byte(" padded ")) + "?="}
	var got []string
	for _, w := range calls {
		got = append(got, w.Header.Get("Mcp-Param-Region"))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Mcp-Param-Region headers (-want +got):\n%s", diff)
	}

	_, _ = reg.Call(ctx, conn.PublicToolName("m", "one"), map[string]any{})
	methods := map[string]bool{}
	for _, w := range srv.requests() {
		methods[w.Method] = true
		if v := w.Header.Get("Mcp-Protocol-Version"); v != conn.StatelessProtocolVersion {
			t.Errorf("%s %s: MCP-Protocol-Version %q, want %s", w.Method, w.ID, v, conn.StatelessProtocolVersion)
		}
		if v := w.Header.Get("Mcp-Method"); v != w.Method {
			t.Errorf("%s %s: Mcp-Method %q", w.Method, w.ID, v)
		}
		if w.Name != "" && w.Header.Get("Mcp-Name") != w.Name {
			t.Errorf("%s %s: Mcp-Name %q, want %q", w.Method, w.ID, w.Header.Get("Mcp-Name"), w.Name)
		}
		if w.ID != "" && w.MetaVersion != conn.StatelessProtocolVersion {
			t.Errorf("%s %s: _meta protocol version %q, want %s", w.Method, w.ID, w.MetaVersion, conn.StatelessProtocolVersion)
		}
	}
	for _, m := range []string{"server/discover", "tools/list", "tools/call"} {
		if !methods[m] {
			t.Errorf("no %s request seen (saw %v)", m, methods)
		}
	}
}

// A round in flight when the server is lost (the host is still answering
// its input request) ends as a call in flight does: with the one
// unavailable error, the connection's loss as its cause.
func TestRoundInFlightWhenTheServerIsLost(t *testing.T) {
	srv := conntest.NewServer()
	defer srv.Close()
	sent := make(chan struct{}, 2)
	srv.MCP.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "who?",
				RequestedSchema: map[string]any{"type": "object"}}}, RequestState: "s"}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sent <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	entered := make(chan struct{}, 1)
	rec := conntest.NewRecorder()
	reg := conn.NewRegistry()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "m", Transport: srv.Transport(), Registry: reg, FailOnStartupError: true, Clock: clock.NewMock(),
		Logger: quiet(), OnTransition: rec.OnTransition,
		Client: &mcp.ClientOptions{
			// The host's user takes their time: the handler returns
			// only when its context ends.
			ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				entered <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sup.Close(context.Background()) }()
	if got := sup.Status().Protocol; got != conn.StatelessProtocolVersion {
		t.Fatalf("negotiated protocol %q, want %s", got, conn.StatelessProtocolVersion)
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	ctx := context.Background()
	call := func(tool string) <-chan outcome {
		out := make(chan outcome, 1)
		go func() {
			res, err := reg.Call(ctx, conn.PublicToolName("m", tool), map[string]any{})
			out <- outcome{res, err}
		}()
		return out
	}
	asking := call("ask")
	waitFor(t, entered, "the host's elicitation handler")
	blocked := call("block")
	waitFor(t, sent, "the blocking call to reach the server")
	srv.Crash()
	round, plain := waitFor(t, asking, "the round's end"), waitFor(t, blocked, "the plain call's end")
	for _, o := range []struct {
		what string
		outcome
	}{{"the round in flight", round}, {"the call in flight", plain}} {
		if o.res != nil || !errors.Is(o.err, conn.ErrUnavailable) || conn.ClassifyCall(o.res, o.err) != conn.OutcomeUnavailable {
			t.Errorf("%s: %v, %v; want the unavailable error", o.what, o.res, o.err)
		}
	}
	if round.err == nil || plain.err == nil {
		return
	}
	// The same error as the call's: the connection ended.
	for _, o := range []struct {
		err  error
		tool string
	}{{round.err, "ask"}, {plain.err, "block"}} {
		if want := fmt.Sprintf("the connection ended during the call of tool %q", conn.PublicToolName("m", o.tool)); !strings.Contains(o.err.Error(), want) {
			t.Errorf("error %q: want %q", o.err, want)
		}
	}
	if !errors.Is(round.err, mcp.ErrConnectionClosed) {
		t.Errorf("round error %q: want it to match mcp.ErrConnectionClosed", round.err)
	}
}

// A host with handlers still reaches a server of the classic era only: it
// refuses server/discover, so the SDK initializes the classic way, and the
// server's requests during a call reach the same handlers.
func TestHandlersOnAClassicOnlyServer(t *testing.T) {
	srv := conntest.NewServer()
	defer srv.Close()
	srv.MCP.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "server/discover" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
			}
			return next(ctx, method, req)
		}
	})
	srv.MCP.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object"}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(res.Content["name"])}}}, nil
		})
	reg := conn.NewRegistry()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "m", Transport: srv.Transport(), Registry: reg, FailOnStartupError: true, Clock: clock.NewMock(), Logger: quiet(),
		Client: &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sup.Close(context.Background()) }()
	if got := sup.Status().Protocol; got != conn.ClassicProtocolVersion {
		t.Errorf("negotiated protocol %q, want %s", got, conn.ClassicProtocolVersion)
	}
	res, err := reg.Call(context.Background(), conn.PublicToolName("m", "ask"), map[string]any{})
	if got := resultOf(t, res, err); got != "ada" {
		t.Errorf("result %q, want ada", got)
	}
}
