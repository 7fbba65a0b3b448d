package front

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// post sends one JSON-RPC request of protocol 2026-07-28 to the front at
// url, and returns the response's body.
func post(t *testing.T, url, method, name, params string) string {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
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
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A resources/read through the front is a valid 2026-07-28 result for a
// client of that era (a classic backend's carries no resultType), over
// the HTTP front without a session.
func TestReadResultsAreValidForModernClients(t *testing.T) {
	reg, cat := conn.NewRegistry(), conn.NewCatalog()
	var sup *conn.Supervisor
	bs := newFakeBackends()
	f := New(Options{Registry: reg, Catalog: cat, Backends: bs})
	srv := conntest.NewServer(conntest.Accept)
	srv.MCP.AddResource(&mcp.Resource{URI: "res://x", Name: "x"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "res://x", Text: "hello"}}}, nil
	})
	rec := conntest.NewRecorder()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	var err error
	sup, err = conn.Start(context.Background(), conn.Config{Name: "a", Transport: srv.Transport(), Registry: reg, Catalog: cat,
		Reconnect: &p, Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition,
		ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	bs.set("a", sup)
	rec.Expect(t, limit, conn.Established)
	for len(cat.Resources()) == 0 {
		select {
		case <-cat.Changed():
		case <-time.After(limit):
			t.Fatal("the catalog did not list res://x")
		}
	}
	f.Update()
	hs := httptest.NewServer(f.Handler())
	t.Cleanup(func() { hs.Close(); _ = sup.Close(context.Background()); srv.Close() })

	got := post(t, hs.URL, "resources/read", "res://x", `"uri":"res://x"`)
	for _, want := range []string{`"resultType":"complete"`, `"cacheScope":"public"`, `"text":"hello"`} {
		if !strings.Contains(got, want) {
			t.Errorf("resources/read answered %s; want it to contain %s", got, want)
		}
	}
	if got := post(t, hs.URL, "server/discover", "", ""); !strings.Contains(got, `"2026-07-28"`) {
		t.Errorf("server/discover answered %s; want 2026-07-28 among the versions", got)
	}
}

// An error of the front's has a JSON-RPC code, and a backend's empty
// cacheScope becomes the default.
func TestEraMiddleware(t *testing.T) {
	plain := errors.New("refused")
	h := eraMiddleware(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, plain })
	_, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInternalError || wire.Message != "refused" {
		t.Errorf("a plain error became %#v, want code %d", err, jsonrpc.CodeInternalError)
	}
	own := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}
	h = eraMiddleware(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, own })
	if _, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{}); err != own {
		t.Errorf("a JSON-RPC error became %v", err)
	}
	h = eraMiddleware(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	res, err := h(context.Background(), "resources/read", &mcp.ReadResourceRequest{})
	if r, ok := res.(*mcp.ReadResourceResult); err != nil || !ok || r.CacheScope != "public" {
		t.Errorf("read result %#v, %v; want cacheScope public", res, err)
	}
}
