//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and tested.

package front

import (
	"context"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 client's instance gets the client's roots by an event:
// the server's roots/list becomes an input request of the client's call,
// and the server sees the client's answer, never a list of another
// request. The client's next call of a tool that asks nothing is served
// at once.
func TestModernClientsRootsComeFromItsCall(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	c := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	// go-sdk's client declares roots by default.
	alice, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, DisableStandaloneSSE: true, HTTPClient: asSubject("alice")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = alice.Close() }()
	res := asked(t, alice, "roots")
	answers := mcp.InputResponseMap{}
	for id, req := range res.InputRequests {
		if _, ok := req.(*mcp.ListRootsParams); !ok {
			t.Fatalf("input request %q is a %T, want a roots request", id, req)
		}
		answers[id] = &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///alice"}}}
	}
	got := callText(t, alice, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{},
		RequestState: res.RequestState, InputResponses: answers})
	if got != "file:///alice" {
		t.Errorf("alice's server saw roots %q, want file:///alice", got)
	}
	if n := len(r.bs.instances()); n != 1 {
		t.Fatalf("%d instances of alice's, want 1", n)
	}
	// Her next call of a tool that asks nothing is served at once: her
	// instance runs, so she is not asked again before it. (A tool whose
	// server asks for roots asks her again in each call: no call is
	// answered with a list another request gave.)
	again, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
	if err != nil || again.NeedsInput() {
		t.Fatalf("alice's second call: %+v, %v; want a result", again, err)
	}
}

// A 2026-07-28 client that declares no roots is not asked for them: its
// call starts its instance at once.
func TestModernClientWithoutRootsIsNotAsked(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, perClient: true})
	c := mcp.NewClient(&mcp.Implementation{Name: "bob"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, DisableStandaloneSSE: true, HTTPClient: asSubject("bob")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}})
	if err != nil || res.NeedsInput() || res.IsError {
		t.Fatalf("bob's call: %+v, %v; want its result at once", res, err)
	}
	if n := len(r.bs.instances()); n != 1 {
		t.Errorf("%d instances of bob's, want 1", n)
	}
}
