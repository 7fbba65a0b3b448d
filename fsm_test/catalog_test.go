//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still served, and tested.

package fsm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsTool answers with the URIs of the client's roots.
func rootsTool(srv *conntest.Server) {
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(strings.Join(uris, " ")), nil, nil
	})
}

// Roots survive reconnects, and a change reaches a live session as
// notifications/roots/list_changed.
func TestRootsAcrossRecovery(t *testing.T) {
	changed := make(chan struct{}, 10)
	srv := conntest.NewServerWithOptions(&mcp.ServerOptions{
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { changed <- struct{}{} },
	}, accept)
	rootsTool(srv)
	h := newHarnessOn(t, srv, nil, withPolicy(small), classic(), func(_ *harness, c *conn.Config) {
		c.Roots = []*mcp.Root{{URI: "file:///a"}}
	})
	h.expect(conn.Established)
	roots := func() string {
		t.Helper()
		res, err := h.reg.Call(context.Background(), "mcp__fx__roots", nil)
		if err != nil {
			t.Fatalf("roots: %v", err)
		}
		return resultText(t, res)
	}
	steps := []struct {
		name   string
		do     func()
		notify bool
		want   string
	}{
		{"initial", func() {}, false, "file:///a"},
		{"set while live", func() {
			if err := h.sup.SetRoots(&mcp.Root{URI: "file:///b"}, &mcp.Root{URI: "file:///c"}); err != nil {
				t.Fatal(err)
			}
		}, true, "file:///b file:///c"},
		{"after a crash", h.recoverFromCrash, false, "file:///b file:///c"},
		{"set during an outage, then recovered", func() {
			h.crash()
			tr := h.expect(conn.LostReconnecting)[0]
			if err := h.sup.SetRoots(&mcp.Root{URI: "file:///d"}); err != nil {
				t.Fatal(err)
			}
			h.advance(tr.Delay)
			h.expect(conn.Connecting, conn.Established)
		}, false, "file:///d"},
	}
	for _, st := range steps {
		st.do()
		if st.notify {
			waitFor(t, changed, st.name+": roots list_changed")
		}
		if got := roots(); got != st.want {
			t.Errorf("%s: roots %q, want %q", st.name, got, st.want)
		}
	}
	if err := h.sup.SetRoots(&mcp.Root{URI: "file:///x"}, &mcp.Root{URI: "file:///x"}); err == nil {
		t.Error("SetRoots with a URI twice: no error")
	}
}

// Subscriptions made through the supervisor are re-sent to every new
// generation, and updates reach the user's handler after recovery.
func TestSubscriptionsAcrossRecovery(t *testing.T) {
	var mu sync.Mutex
	var subs []string
	updates := make(chan string, 10)
	srv := conntest.NewServerWithOptions(&mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			subs = append(subs, "+"+req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			subs = append(subs, "-"+req.Params.URI)
			return nil
		},
	}, accept)
	srv.MCP.AddResource(&mcp.Resource{URI: "res://a", Name: "a"}, textResource("a"))
	h := newHarnessOn(t, srv, nil, withPolicy(small), classic(), withClient(&mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
	}))
	h.expect(conn.Established)
	ctx := context.Background()
	seen := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), subs...) }
	if err := h.sup.Subscribe(ctx, "res://a"); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.Subscribe(ctx, "res://b"); err != nil {
		t.Fatal(err)
	}
	h.recoverFromCrash()
	if diff := cmp.Diff([]string{"+res://a", "+res://b", "+res://a", "+res://b"}, seen()); diff != "" {
		t.Errorf("subscriptions seen by the server (-want +got):\n%s", diff)
	}
	if err := srv.MCP.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "res://a"}); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, updates, "a resource update after recovery"); got != "res://a" {
		t.Errorf("update for %q, want res://a", got)
	}
	if err := h.sup.Unsubscribe(ctx, "res://b"); err != nil {
		t.Fatal(err)
	}
	// During an outage Subscribe keeps the subscription for later.
	h.crash()
	tr := h.expect(conn.LostReconnecting)[0]
	if err := h.sup.Subscribe(ctx, "res://c"); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("Subscribe during an outage: err = %v, want ErrUnavailable", err)
	}
	h.advance(tr.Delay)
	h.expect(conn.Connecting, conn.Established)
	want := []string{"+res://a", "+res://b", "+res://a", "+res://b", "-res://b", "+res://a", "+res://c"}
	if diff := cmp.Diff(want, seen()); diff != "" {
		t.Errorf("subscriptions seen by the server (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"res://a", "res://c"}, h.sup.Subscriptions()); diff != "" {
		t.Errorf("Subscriptions (-want +got):\n%s", diff)
	}
}

func textResource(body string) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
	}
}

func prompt(name string) (*mcp.Prompt, mcp.PromptHandler) {
	return &mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name + " says hi"}}}}, nil
	}
}

// catalogView is what a host shows: resource URIs, template URIs and
// public prompt names.
func catalogView(c *conn.Catalog) []string {
	var out []string
	for _, r := range c.Resources() {
		out = append(out, "resource "+r.Server+" "+r.Raw.URI)
	}
	for _, r := range c.ResourceTemplates() {
		out = append(out, "template "+r.Server+" "+r.Raw.URITemplate)
	}
	for _, p := range c.Prompts() {
		out = append(out, "prompt "+p.Name)
	}
	return out
}

// The catalog is listed at connect and on list_changed, swapped in whole
// (a watcher never sees a half-changed catalog), kept during an outage
// with reads failing fast, and dropped at exhaustion.
func TestCatalogAcrossRecoveryAndExhaustion(t *testing.T) {
	srv := conntest.NewServer(accept)
	srv.MCP.AddResource(&mcp.Resource{URI: "res://a", Name: "a"}, textResource("body a"))
	srv.MCP.AddResource(&mcp.Resource{URI: "res://b", Name: "b"}, textResource("body b"))
	srv.MCP.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "res://t/{x}", Name: "t"}, textResource("templated"))
	srv.MCP.AddPrompt(prompt("greet"))
	cat := conn.NewCatalog()
	// Every state of the catalog a host could observe, in order.
	var mu sync.Mutex
	var views [][]string
	stop := make(chan struct{})
	watched := make(chan struct{})
	ch := cat.Changed()
	go func() {
		defer close(watched)
		for {
			select {
			case <-ch:
			case <-stop:
				return
			}
			ch = cat.Changed()
			mu.Lock()
			views = append(views, catalogView(cat))
			mu.Unlock()
		}
	}()
	h := newHarnessOn(t, srv, nil, withPolicy(small), func(_ *harness, c *conn.Config) { c.Catalog = cat })
	h.expect(conn.Established)
	first := []string{"resource fx res://a", "resource fx res://b", "template fx res://t/{x}", "prompt mcp__fx__greet"}
	if diff := cmp.Diff(first, catalogView(cat)); diff != "" {
		t.Fatalf("catalog at connect (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	res, err := cat.Resources()[0].Read(ctx)
	if err != nil || res.Contents[0].Text != "body a" {
		t.Fatalf("read res://a: %v, %v", res, err)
	}
	if res, err := cat.ReadResource(ctx, "fx", "res://t/1"); err != nil || res.Contents[0].Text != "templated" {
		t.Fatalf("read templated res://t/1: %v, %v", res, err)
	}
	if pr, err := cat.GetPrompt(ctx, "mcp__fx__greet", nil); err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "greet says hi" {
		t.Fatalf("get prompt: %v, %v", pr, err)
	}
	// Outage: kept, reads fail fast; the server changes meanwhile.
	h.crash()
	h.expect(conn.LostReconnecting)
	if diff := cmp.Diff(first, catalogView(cat)); diff != "" {
		t.Errorf("catalog during the outage (-want +got):\n%s", diff)
	}
	if _, err := cat.ReadResource(ctx, "fx", "res://a"); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("read during the outage: err = %v, want ErrUnavailable", err)
	}
	if _, err := cat.GetPrompt(ctx, "mcp__fx__greet", nil); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("prompt during the outage: err = %v, want ErrUnavailable", err)
	}
	srv.MCP.RemoveResources("res://a")
	srv.MCP.AddResource(&mcp.Resource{URI: "res://c", Name: "c"}, textResource("body c"))
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	second := []string{"resource fx res://b", "resource fx res://c", "template fx res://t/{x}", "prompt mcp__fx__greet"}
	if diff := cmp.Diff(second, catalogView(cat)); diff != "" {
		t.Errorf("catalog after recovery (-want +got):\n%s", diff)
	}
	// A live list_changed re-lists.
	srv.MCP.AddPrompt(prompt("bye"))
	third := []string{"resource fx res://b", "resource fx res://c", "template fx res://t/{x}", "prompt mcp__fx__bye", "prompt mcp__fx__greet"}
	waitCatalog(t, cat, "the new prompt listed", func() bool { return cmp.Equal(third, catalogView(cat)) })
	// Exhaustion drops it: refuse every attempt and run the budget out.
	h.srv.Plan(refuse)
	h.crash()
	for tr := h.next(); tr.To != conn.Exhausted; tr = h.next() {
		if tr.To == conn.LostReconnecting || tr.To == conn.FailedRetrying {
			h.advance(tr.Delay)
		}
	}
	if got := catalogView(cat); len(got) != 0 {
		t.Errorf("catalog after exhaustion: %v, want empty", got)
	}
	close(stop)
	<-watched
	allowed := [][]string{first, second, third, nil}
	for _, v := range views {
		ok := false
		for _, a := range allowed {
			if cmp.Equal(a, v) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("a host saw a catalog that was never listed whole: %v", v)
		}
	}
}

// A server without resources or prompts lists none, and connects.
func TestCatalogOfAToolsOnlyServer(t *testing.T) {
	cat := conn.NewCatalog()
	h := newHarness(t, []behaviour{accept}, []string{"echo"}, func(_ *harness, c *conn.Config) { c.Catalog = cat })
	h.expect(conn.Established)
	if got := catalogView(cat); len(got) != 0 {
		t.Errorf("catalog %v, want empty", got)
	}
}

// waitCatalog waits until cond holds of the catalog, re-checking at each
// change.
func waitCatalog(t *testing.T, c *conn.Catalog, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		ch := c.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s within %v", what, waitLimit)
		}
	}
}
