package front

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A shared server whose configuration pins no protocol version keeps one
// instance per era its clients speak: the 2026-07-28 clients' calls go
// to one shared instance of their era, started on the first of them, so
// they get the server's own input requests (under its key "name", not
// one of the front's bridge), and a 2025-11-25 session's calls go to the
// classic shared instance, whose server elicits during the call. Both
// are closed when the front and the host close.
func TestSharedServerKeepsAnInstancePerEra(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: ""})
	shared, _ := r.bs.Supervisor("a")
	if got := shared.Status().Protocol; got != conn.ClassicProtocolVersion {
		t.Fatalf("the shared instance negotiated %q, want %q", got, conn.ClassicProtocolVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for _, name := range []string{"alice", "carol"} {
		sess := r.connectRaw(t, name)
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("%s: call ask: %+v, %v; want input_required", name, res, err)
		}
		if _, ok := res.InputRequests["name"]; !ok || len(res.InputRequests) != 1 {
			t.Fatalf("%s: input requests %v; want the server's one, under its key \"name\"", name, res.InputRequests)
		}
		if bridgedState(res.RequestState) {
			t.Errorf("%s: requestState %q is the front's bridge's; want the server's own", name, res.RequestState)
		}
		got, err := sess.CallTool(ctx, answer(res, "ask", name))
		if err != nil {
			t.Fatal(err)
		}
		if text := got.Content[0].(*mcp.TextContent).Text; text != "accept:"+name {
			t.Errorf("%s: the answered call = %q, want accept:%s", name, text, name)
		}
	}
	bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion)
	if got := bob.call(t, "ask", nil); got != "accept:bob" {
		t.Errorf("the 2025-11-25 session's call = %q, want accept:bob (the classic instance elicits during the call)", got)
	}
	started := r.bs.instances()
	if len(started) != 1 {
		t.Fatalf("%d instances started beside the shared one, want 1 (one for every 2026-07-28 client)", len(started))
	}
	if got := started[0].Status().Protocol; got != conn.StatelessProtocolVersion {
		t.Errorf("the 2026-07-28 clients' instance negotiated %q, want %q", got, conn.StatelessProtocolVersion)
	}
	if err := r.f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := started[0].State(); st != conn.Disposed {
		t.Errorf("after the front closed, the 2026-07-28 instance is %s, want %s", st, conn.Disposed)
	}
	if r.f.eraInstance("a") != nil {
		t.Error("a closed front still hands out a 2026-07-28 instance")
	}
}

// A server whose configuration pins a protocol version has one shared
// instance, which serves clients of both eras (through the era bridge).
func TestPinnedSharedServerHasOneInstance(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion})
	alice := r.connectAnon(t, "alice", false)
	if got := callText(t, alice, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}}); got != "accept:alice" {
		t.Errorf("the bridged call = %q, want accept:alice", got)
	}
	if n := len(r.bs.instances()); n != 0 {
		t.Errorf("%d instances started beside the shared one of a pinned server, want none", n)
	}
}

// The 2026-07-28 clients of a shared server are served the listing of
// the instance that answers them, once it has listed: a tool only it
// lists is theirs (not the classic clients'), and a tool it adds later
// reaches them with notifications/tools/list_changed.
func TestModernClientsListTheirErasInstance(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: ""})
	other := conntest.NewServer(conntest.Accept)
	t.Cleanup(other.Close)
	text := func(s string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
	}
	object := map[string]any{"type": "object"}
	other.MCP.AddTool(&mcp.Tool{Name: "meta", InputSchema: object}, text("era"))
	other.MCP.AddTool(&mcp.Tool{Name: "era_only", InputSchema: object}, text("era only"))
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	r.bs.starter(func() conn.Config {
		return conn.Config{Name: "a", Transport: other.Transport(), Reconnect: &p, Clock: clock.NewMock()}
	})
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	alice, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, DisableStandaloneSSE: true, HTTPClient: asSubject("alice")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alice.Close() })
	if got := callText(t, alice, &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{}}); got != "era" {
		t.Fatalf("alice's call of meta answered %q, want era (its era's instance)", got)
	}
	lists := func(sess *mcp.ClientSession, name string) bool {
		res, err := sess.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == name {
				return true
			}
		}
		return false
	}
	eventually(t, "alice listing era_only", func() bool { return lists(alice, "era_only") })
	bob := r.connect(t, "http", "bob", conn.ClassicProtocolVersion)
	if lists(bob.sess, "era_only") {
		t.Error("the 2025-11-25 client lists a tool only the 2026-07-28 instance has")
	}
	for len(changed) > 0 {
		<-changed
	}
	other.MCP.AddTool(&mcp.Tool{Name: "later", InputSchema: object}, text("later"))
	eventually(t, "alice listing later", func() bool { return lists(alice, "later") })
	_ = recv(t, changed, "notifications/tools/list_changed for the tool the instance added")
}
