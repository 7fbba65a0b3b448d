package conn_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type traceKey struct{}

// propagateTrace is a host's Config.Propagate: the trace id its ctx
// holds, under "traceparent", and two keys no header can carry.
func propagateTrace(ctx context.Context, set func(key, value string)) {
	if id, ok := ctx.Value(traceKey{}).(string); ok {
		set("traceparent", id)
		set("authorization", "Bearer forged") // a header the request has: kept as it is
		set("x-line", "a\r\nInjected: 1")     // no header can carry it: _meta only
		set("bad key", "v")
	}
}

// metaTool answers with the request's _meta and HTTP headers, as JSON.
func metaTool(srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{Name: "meta", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out := map[string]any{"meta": req.Params.Meta}
			if req.Extra != nil && req.Extra.Header != nil {
				out["traceparent"] = req.Extra.Header.Get("Traceparent")
				out["authorization"] = req.Extra.Header.Get("Authorization")
				out["injected"] = req.Extra.Header.Get("Injected") + req.Extra.Header.Get("X-Line")
			}
			b, _ := json.Marshal(out)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
}

func callMetaTool(t *testing.T, tool conn.Tool, ctx context.Context) map[string]any {
	t.Helper()
	res, err := tool.Call(ctx, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Config.Propagate adds its keys to a call's _meta, over the caller's
// own (which it does not change), and nothing when it sets nothing.
func TestPropagateIntoMeta(t *testing.T) {
	srv := conntest.NewServer()
	defer srv.Close()
	metaTool(srv.MCP)
	reg := conn.NewRegistry()
	rec := conntest.NewRecorder()
	sup, err := conn.Start(context.Background(), conn.Config{Name: "m", Transport: srv.Transport(), Registry: reg,
		Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition, Propagate: propagateTrace})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	rec.Expect(t, 10*time.Second, conn.Established)
	tool, _ := reg.Lookup("mcp__m__meta")

	own := mcp.Meta{"progressToken": "p1", "traceparent": "the client's"}
	ctx := context.WithValue(conn.WithCallMeta(context.Background(), own), traceKey{}, "00-trace-span-01")
	got := callMetaTool(t, tool, ctx)["meta"].(map[string]any)
	for k, want := range map[string]any{"progressToken": "p1", "traceparent": "00-trace-span-01", "authorization": "Bearer forged", "x-line": "a\r\nInjected: 1"} {
		if got[k] != want {
			t.Errorf("_meta[%q] = %v, want %v (all: %v)", k, got[k], want, got)
		}
	}
	if diff := cmp.Diff(mcp.Meta{"progressToken": "p1", "traceparent": "the client's"}, own); diff != "" {
		t.Errorf("the caller's WithCallMeta map changed (-want +got):\n%s", diff)
	}
	got = callMetaTool(t, tool, context.Background())["meta"].(map[string]any)
	if _, ok := got["traceparent"]; ok {
		t.Errorf("a call whose ctx holds nothing to propagate sent %v", got)
	}
}

// On an HTTP transport the keys Propagate sets are also headers of the
// request, except those the request already has and those no header can
// carry.
func TestPropagateIntoHTTPHeaders(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "srv"}, nil)
	metaTool(server)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	tr := conn.Streamable(ts.URL)
	tr.Client = client
	tr.Header = http.Header{"Authorization": {"Bearer configured"}}
	reg := conn.NewRegistry()
	sup, err := conn.Start(context.Background(), conn.Config{Name: "h", Transport: tr, Registry: reg,
		FailOnStartupError: true, Logger: quiet(), Propagate: propagateTrace})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	tool, ok := reg.Lookup("mcp__h__meta")
	if !ok {
		t.Fatal("no tool meta")
	}
	got := callMetaTool(t, tool, context.WithValue(context.Background(), traceKey{}, "00-trace-span-01"))
	want := map[string]any{"traceparent": "00-trace-span-01", "authorization": "Bearer configured", "injected": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if m := got["meta"].(map[string]any); m["traceparent"] != "00-trace-span-01" {
		t.Errorf("_meta over HTTP: %v", m)
	}
	if got := callMetaTool(t, tool, context.Background()); got["traceparent"] != "" {
		t.Errorf("a call with nothing to propagate sent the header %q", got["traceparent"])
	}
}
