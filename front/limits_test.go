package front

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool adds a tool to r's backend and waits until the front's
// registry publishes it.
func (r *relayRig) addTool(t *testing.T, tool *mcp.Tool, h mcp.ToolHandler) {
	t.Helper()
	changed := r.f.opts.Registry.Changed()
	r.srv.MCP.AddTool(tool, h)
	public := conn.PublicToolName("a", tool.Name)
	deadline := time.After(limit)
	for _, ok := r.f.opts.Registry.Lookup(public); !ok; _, ok = r.f.opts.Registry.Lookup(public) {
		select {
		case <-changed:
			changed = r.f.opts.Registry.Changed()
		case <-deadline:
			t.Fatalf("tool %q was not listed", tool.Name)
		}
	}
	r.f.Update() // what Sync does at the change, done before the test goes on
}

// bigText is n bytes of numbered lines.
func bigText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d %s\n", i, strings.Repeat("x", 60))
	}
	return b.String()[:n]
}

// A 5 MB result (1 MB under the race detector) is cut at a line under the limit, with a note saying how
// much was cut and a link to the whole of it, which its caller reads back
// in pages, and no other caller can; it is gone once kept long enough.
func TestALargeResultIsCutAndKeptForItsCaller(t *testing.T) {
	clk := clock.NewMock()
	const max = bigResultBytes / 5
	var cuts []int
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion, bearer: true, clock: clk, catalog: true,
		limits: ResultLimits{MaxBytes: 64 << 20, PerServer: func(s string) (int, bool) { return max, s == "a" }, Keep: time.Minute,
			OnCut: func(_ string, _, cut int) { cuts = append(cuts, cut) }}})
	whole := bigText(bigResultBytes)
	r.addTool(t, &mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: whole}}}, nil
		})
	alice := r.connectCaller(t, conn.ClassicProtocolVersion, "alice")
	bob := r.connectCaller(t, conn.ClassicProtocolVersion, "bob")
	// Each request has a deadline of its own.
	ctx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		t.Cleanup(cancel)
		return ctx
	}
	res, err := alice.sess.CallTool(ctx(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v, %v", res, err)
	}
	if len(res.Content) != 3 {
		t.Fatalf("%d content blocks, want the cut text, the note and the link", len(res.Content))
	}
	kept := res.Content[0].(*mcp.TextContent).Text
	if len(kept) > max || len(kept) < max-100 || !strings.HasSuffix(kept, "\n") || !strings.HasPrefix(whole, kept) {
		t.Errorf("the cut text: %d bytes, ends %q; want the start of the result up to a line break under %d bytes", len(kept), kept[len(kept)-5:], max)
	}
	note := res.Content[1].(*mcp.TextContent).Text
	cut := len(whole) - len(kept)
	if !strings.Contains(note, fmt.Sprintf("%d bytes were cut", cut)) || !strings.Contains(note, fmt.Sprint(len(whole))) {
		t.Errorf("the note %q does not say %d of %d bytes were cut", note, cut, len(whole))
	}
	if len(cuts) != 1 || cuts[0] != cut {
		t.Errorf("OnCut saw %v, want [%d]", cuts, cut)
	}
	link, ok := res.Content[2].(*mcp.ResourceLink)
	if !ok || !strings.HasPrefix(link.URI, ResultURIPrefix) {
		t.Fatalf("the last block %#v is not a link to the kept result", res.Content[2])
	}
	// The owner reads it back in pages of the limit's size.
	var got strings.Builder
	uri, pages := fmt.Sprintf("%s?length=%d", link.URI, max), 0
	for uri != "" {
		page, err := alice.sess.ReadResource(ctx(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("alice's read of %s: %v", uri, err)
		}
		got.WriteString(page.Contents[0].Text)
		pages++
		uri, _ = page.Meta["mcpfsm/next"].(string)
	}
	if want := (len(whole) + max - 1) / max; got.String() != whole || pages != want {
		t.Errorf("read back %d bytes in %d pages, want the %d bytes of the result in %d", got.Len(), pages, len(whole), want)
	}
	// Another caller cannot.
	if _, err := bob.sess.ReadResource(ctx(), &mcp.ReadResourceParams{URI: link.URI}); err == nil || !strings.Contains(err.Error(), "no result is kept") {
		t.Errorf("bob's read of alice's result: %v; want it refused as unknown", err)
	}
	// Past its time it is gone.
	clk.Add(time.Minute)
	if _, err := alice.sess.ReadResource(ctx(), &mcp.ReadResourceParams{URI: link.URI}); err == nil {
		t.Error("alice read her result after it expired")
	}
}

// A result within the limit passes whole; binary content counts by its
// decoded size; whole blocks only are kept before the cut.
func TestLimitResultCountsDecodedBytes(t *testing.T) {
	f := New(Options{Registry: conn.NewRegistry(), Limits: ResultLimits{MaxBytes: 100, KeepCount: 1}})
	c := f.newClient(stdioClient, authz.Caller{Operator: true})
	defer c.close()
	img := &mcp.ImageContent{Data: make([]byte, 90), MIMEType: "image/png"} // 120 bytes in base64
	res, ci := f.results.limit(c.ownerOf(nil), "s", "t", &mcp.CallToolResult{Content: []mcp.Content{img}})
	if len(res.Content) != 1 || ci.cut != 0 || ci.size != 90 {
		t.Errorf("a 90-byte image under a 100-byte limit: %d blocks, %+v", len(res.Content), ci)
	}
	res, ci = f.results.limit(c.ownerOf(nil), "s", "t", &mcp.CallToolResult{Content: []mcp.Content{img, img, &mcp.TextContent{Text: "tail"}}})
	if ci.cut != 94 || res.Content[0] != img || len(res.Content) != 3 {
		t.Errorf("two images and a text: %+v, %d blocks; want the first image, the note and the link", ci, len(res.Content))
	}
	if _, ok := res.Content[1].(*mcp.TextContent); !ok {
		t.Errorf("block 1 is %T, want the note", res.Content[1])
	}
	// KeepCount 1: a second cut result evicts the first.
	first := res.Content[2].(*mcp.ResourceLink).URI
	f.results.limit(c.ownerOf(nil), "s", "t", &mcp.CallToolResult{Content: []mcp.Content{img, img}})
	if _, err := f.results.read(c.ownerOf(nil), first); err == nil {
		t.Error("the first kept result is still there past KeepCount")
	}
}
