//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded, and tested.

package front

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogRig is a rig whose backends a and b both list res://shared, the
// template res://echo/{x} and the prompt greet (a also lists res://a),
// take subscriptions and report roots changes; its client has roots and
// counts list changes and resource updates.
type catalogRig struct {
	*rig
	resChanges, promptChanges atomic.Int32
	resChanged, promptChanged chan struct{}
	updated                   chan string
	rootsChanged              map[string]chan struct{}
	subscribed                map[string]chan string
	levelSet                  map[string]chan mcp.LoggingLevel
	logged                    chan string // logger: data of each relayed log message
}

// newCatalogRig makes a catalog rig; names, if given, are the front's Names.
func newCatalogRig(t *testing.T, names ...Names) *catalogRig {
	cr := &catalogRig{resChanged: make(chan struct{}, 100), promptChanged: make(chan struct{}, 100), updated: make(chan string, 100),
		rootsChanged: map[string]chan struct{}{"a": make(chan struct{}, 100), "b": make(chan struct{}, 100)},
		subscribed:   map[string]chan string{"a": make(chan string, 100), "b": make(chan string, 100)},
		levelSet:     map[string]chan mcp.LoggingLevel{"a": make(chan mcp.LoggingLevel, 100), "b": make(chan mcp.LoggingLevel, 100)},
		logged:       make(chan string, 100)}
	text := func(s string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: s}}}
	}
	cat := conn.NewCatalog()
	var nm Names
	if len(names) > 0 {
		nm = names[0]
	}
	cr.rig = newRigWith(t, rigOptions{
		names:   nm,
		catalog: cat,
		ready:   func() bool { return len(cat.Prompts()) == 2 },
		serverOpts: func(name string) *mcp.ServerOptions {
			return &mcp.ServerOptions{
				SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
					cr.subscribed[name] <- req.Params.URI
					return nil
				},
				UnsubscribeHandler:      func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
				RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { cr.rootsChanged[name] <- struct{}{} },
				CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
					ref := req.Params.Ref
					return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{name + ":" + ref.Name + ref.URI}}}, nil
				},
			}
		},
		setup: func(name string, srv *conntest.Server) {
			srv.MCP.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && err == nil {
						cr.levelSet[name] <- p.Level
					}
					return res, err
				}
			})
			srv.MCP.AddResource(&mcp.Resource{URI: "res://shared", Name: "shared"},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return text("shared of " + name), nil
				})
			if name == "a" {
				srv.MCP.AddResource(&mcp.Resource{URI: "res://a", Name: "a"},
					func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
						return text("a"), nil
					})
			}
			srv.MCP.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "res://echo/{x}", Name: "echo"},
				func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return text(name + ":" + strings.TrimPrefix(req.Params.URI, "res://echo/")), nil
				})
			srv.MCP.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from " + name}}}}, nil
			})
		},
		client: &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
				cr.resChanges.Add(1)
				cr.resChanged <- struct{}{}
			},
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
				cr.promptChanges.Add(1)
				cr.promptChanged <- struct{}{}
			},
			LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
				cr.logged <- fmt.Sprint(req.Params.Logger, ": ", req.Params.Data)
			},
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				cr.updated <- req.Params.URI
			},
		},
		roots: []*mcp.Root{{URI: "file:///project"}},
		// Roots, like elicitation, are server-to-client requests: protocol
		// 2025-11-25 and older, for the client and for the backends (on
		// 2026-07-28 a server asks for roots only in a call's result).
		sessOpts: &mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion},
		protocol: conn.ClassicProtocolVersion,
	})
	return cr
}

func (cr *catalogRig) read(t *testing.T, uri string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := cr.sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", "", err
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	return res.Contents[0].Text, res.Contents[0].URI, nil
}

func (cr *catalogRig) mustRead(t *testing.T, uri, want string) {
	t.Helper()
	got, _, err := cr.read(t, uri)
	if err != nil || got != want {
		t.Errorf("read %s = %q, %v; want %q", uri, got, err, want)
	}
}

func (cr *catalogRig) lists(t *testing.T) (res, tmpl, prompts []string) {
	t.Helper()
	ctx := context.Background()
	rl, err := cr.sess.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rl.Resources {
		res = append(res, r.URI)
	}
	tl, err := cr.sess.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tl.ResourceTemplates {
		tmpl = append(tmpl, r.URITemplate)
	}
	pl, err := cr.sess.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pl.Prompts {
		prompts = append(prompts, p.Name)
	}
	return res, tmpl, prompts
}

func (cr *catalogRig) prompt(t *testing.T, name string) (string, error) {
	t.Helper()
	res, err := cr.sess.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name})
	if err != nil {
		return "", err
	}
	return res.Messages[0].Content.(*mcp.TextContent).Text, nil
}

// log makes backend name log data at warning, on every session.
func (cr *catalogRig) log(t *testing.T, name, data string) {
	t.Helper()
	for ss := range cr.backends[name].srv.MCP.Sessions() {
		_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "warning", Logger: "srv", Data: data})
	}
}

// rootsOf asks backend name's live session for its roots.
func (cr *catalogRig) rootsOf(t *testing.T, name string) []string {
	t.Helper()
	var errs []error
	for ss := range cr.backends[name].srv.MCP.Sessions() {
		res, err := ss.ListRoots(context.Background(), nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return uris
	}
	t.Fatalf("no live session of %s answered roots/list: %v", name, errs)
	return nil
}

func recv[V any](t *testing.T, c <-chan V, what string) V {
	t.Helper()
	return conntest.Receive(t, c, limit, what)
}

func TestCatalogUnionAndRouting(t *testing.T) {
	cr := newCatalogRig(t)
	res, tmpl, prompts := cr.lists(t)
	if diff := cmp.Diff([]string{"mcpfsm:b/res://shared", "res://a", "res://shared"}, res); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcpfsm:b/res://echo/{x}", "res://echo/{x}"}, tmpl); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp__a__greet", "mcp__b__greet"}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	cr.mustRead(t, "res://shared", "shared of a")
	cr.mustRead(t, "res://a", "a")
	if got, uri, err := cr.read(t, "mcpfsm:b/res://shared"); err != nil || got != "shared of b" || uri != "mcpfsm:b/res://shared" {
		t.Errorf("read of b's shared = %q under %q, %v", got, uri, err)
	}
	cr.mustRead(t, "res://echo/hi", "a:hi")
	cr.mustRead(t, "mcpfsm:b/res://echo/hi", "b:hi")
	if _, _, err := cr.read(t, "res://nowhere"); err == nil || !strings.Contains(err.Error(), `resource "res://nowhere": no supervised server lists it`) {
		t.Errorf("read of an unknown URI: %v", err)
	}
	for _, name := range []string{"a", "b"} {
		if got, err := cr.prompt(t, "mcp__"+name+"__greet"); err != nil || got != "hello from "+name {
			t.Errorf("prompt of %s = %q, %v", name, got, err)
		}
	}
	// Completions go to the server of the prompt or template, under the
	// server's own names.
	for _, tt := range []struct {
		ref  mcp.CompleteReference
		want string
	}{
		{mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__b__greet"}, "b:greet"},
		{mcp.CompleteReference{Type: "ref/resource", URI: "res://echo/{x}"}, "a:res://echo/{x}"},
		{mcp.CompleteReference{Type: "ref/resource", URI: "mcpfsm:b/res://echo/{x}"}, "b:res://echo/{x}"},
	} {
		comp, err := cr.sess.Complete(context.Background(), &mcp.CompleteParams{Ref: &tt.ref, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "y"}})
		if err != nil || len(comp.Completion.Values) != 1 || comp.Completion.Values[0] != tt.want {
			t.Errorf("complete %+v = %+v, %v; want %q", tt.ref, comp, err, tt.want)
		}
	}
}

func TestCatalogOutageSubscriptionsAndRoots(t *testing.T) {
	cr := newCatalogRig(t)
	a, b := cr.backends["a"], cr.backends["b"]

	// The client's roots reach every backend.
	recv(t, cr.rootsChanged["a"], "roots/list_changed at a")
	recv(t, cr.rootsChanged["b"], "roots/list_changed at b")
	for _, name := range []string{"a", "b"} {
		if diff := cmp.Diff([]string{"file:///project"}, cr.rootsOf(t, name)); diff != "" {
			t.Errorf("roots of %s (-want +got):\n%s", name, diff)
		}
	}

	// Subscriptions under both forms reach the right backend; updates
	// come back under the URI subscribed to.
	ctx := context.Background()
	for _, uri := range []string{"res://shared", "mcpfsm:b/res://shared"} {
		if err := cr.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	if got := recv(t, cr.subscribed["a"], "subscription at a"); got != "res://shared" {
		t.Errorf("a got a subscription to %q", got)
	}
	if got := recv(t, cr.subscribed["b"], "subscription at b"); got != "res://shared" {
		t.Errorf("b got a subscription to %q", got)
	}
	if err := b.srv.MCP.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "res://shared"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, cr.updated, "relayed update of b"); got != "mcpfsm:b/res://shared" {
		t.Errorf("b's update relayed as %q", got)
	}

	// The client's logging level reaches the backends; their messages
	// come back under the server's name.
	if err := cr.sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if got := recv(t, cr.levelSet[name], "logging level at "+name); got != "info" {
			t.Errorf("%s got level %q", name, got)
		}
	}
	cr.log(t, "b", "from b")
	if got := recv(t, cr.logged, "relayed log message"); got != "b/srv: from b" {
		t.Errorf("relayed log message %q", got)
	}

	// a crashes: its reads and prompts fail at once, naming its state.
	a.srv.Crash()
	a.rec.Expect(t, limit, conn.LostReconnecting)
	_, _, err := cr.read(t, "res://shared")
	want := `server "a": connection lost; reconnecting in 1s (attempt 1/3); resource "res://shared" was not read; try again after the next attempt`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("read during the outage: %v; want %q", err, want)
	}
	if _, err := cr.prompt(t, "mcp__a__greet"); err == nil || !strings.Contains(err.Error(), `server "a": connection lost; reconnecting in 1s (attempt 1/3); prompt "mcp__a__greet" was not fetched`) {
		t.Errorf("prompt during the outage: %v", err)
	}
	cr.mustRead(t, "mcpfsm:b/res://shared", "shared of b")
	// A subscription made during the outage is accepted, and sent when a
	// is back.
	if err := cr.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://a"}); err != nil {
		t.Errorf("subscribe during the outage: %v", err)
	}

	// The client's roots change during the outage: b hears at once, a
	// gets them with its new session.
	cr.client.AddRoots(&mcp.Root{URI: "file:///other"})
	recv(t, cr.rootsChanged["b"], "roots/list_changed at b")
	if diff := cmp.Diff([]string{"file:///other", "file:///project"}, cr.rootsOf(t, "b")); diff != "" {
		t.Errorf("roots of b (-want +got):\n%s", diff)
	}

	cr.clk.Add(time.Second)
	a.rec.Expect(t, limit, conn.Connecting, conn.Established)
	for _, want := range []string{"res://shared", "res://a"} {
		if got := recv(t, cr.subscribed["a"], "re-sent subscription at a"); got != want {
			t.Errorf("a got a re-sent subscription to %q, want %q", got, want)
		}
	}
	if diff := cmp.Diff([]string{"file:///other", "file:///project"}, cr.rootsOf(t, "a")); diff != "" {
		t.Errorf("roots of a after its reconnect (-want +got):\n%s", diff)
	}
	cr.mustRead(t, "res://shared", "shared of a")
	recv(t, cr.levelSet["a"], "logging level re-sent to a after its reconnect")
	cr.log(t, "a", "from a")
	if got := recv(t, cr.logged, "relayed log message of a"); got != "a/srv: from a" {
		t.Errorf("relayed log message %q", got)
	}
	if err := a.srv.MCP.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "res://shared"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, cr.updated, "relayed update of a after its reconnect"); got != "res://shared" {
		t.Errorf("a's update relayed as %q", got)
	}

	// The reconnect listed the same catalog: no list change so far. A
	// resource added at b is one.
	if n := cr.resChanges.Load(); n != 0 {
		t.Errorf("%d resources/list_changed before any real change", n)
	}
	b.srv.MCP.AddResource(&mcp.Resource{URI: "res://new", Name: "new"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "new"}}}, nil
		})
	recv(t, cr.resChanged, "resources/list_changed after b added a resource")
	cr.mustRead(t, "res://new", "new")
	if n := cr.promptChanges.Load(); n != 0 {
		t.Errorf("%d prompts/list_changed before any real change", n)
	}
	a.srv.MCP.AddPrompt(&mcp.Prompt{Name: "bye"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "bye"}}}}, nil
	})
	recv(t, cr.promptChanged, "prompts/list_changed after a added a prompt")
	if got, err := cr.prompt(t, "mcp__a__bye"); err != nil || got != "bye" {
		t.Errorf("new prompt = %q, %v", got, err)
	}
}
