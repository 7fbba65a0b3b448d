package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/internal/otlptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// policyServe is serve -listen behind an issuer of the test's, over the
// fixture server "fix" with the per-caller policy keys.
type policyServe struct {
	*isolated
	cfg string
}

func servePolicy(t *testing.T, keys map[string]any) *policyServe {
	t.Helper()
	is := serveIsolated(t, []string{fixture.Build(t), "-session"}, keys)
	return &policyServe{isolated: is, cfg: filepath.Join(is.dir, "servers.json")}
}

// rewrite replaces the fixture server's policy keys in the config and
// has serve reload it (SIGHUP).
func (p *policyServe) rewrite(t *testing.T, keys map[string]any) {
	t.Helper()
	var cfg map[string]map[string]map[string]any
	b, err := os.ReadFile(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"allowScopes", "toolScopes", "rateLimit"} {
		delete(cfg["mcpServers"]["fs"], k)
	}
	for k, v := range keys {
		cfg["mcpServers"]["fs"][k] = v
	}
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// scoped is a client of serve as subject with scopes, counting the tool
// list changes it is told of.
type scoped struct {
	sess    *mcp.ClientSession
	changes atomic.Int32
	changed chan struct{}
}

func (p *policyServe) client(t *testing.T, subject string, scopes ...string) *scoped {
	t.Helper()
	s := &scoped{changed: make(chan struct{}, 16)}
	c := mcp.NewClient(&mcp.Implementation{Name: subject}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.changes.Add(1)
			s.changed <- struct{}{}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url,
		HTTPClient: fixture.Bearer(p.issuer.Token(t, isolatedResource, subject, strings.Join(scopes, " ")))},
		&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		t.Fatalf("%s connects: %v", subject, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	s.sess = sess
	return s
}

func (s *scoped) tools(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := s.sess.ListTools(ctx, nil)
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

// Two callers with different scopes see different tools; the forbidden
// call is refused with the scope named; a reload that changes a rule
// tells the affected session alone; a caller's calls past the rate are
// refused while another caller's pass.
func TestPerCallerPolicyThroughServe(t *testing.T) {
	p := servePolicy(t, map[string]any{"allowScopes": []string{"fix:use"}, "toolScopes": map[string]any{"ask": []string{"fix:ask"}},
		"rateLimit": "5/m"})
	alice := p.client(t, "alice", "fix:use", "fix:ask")
	bob := p.client(t, "bob", "fix:use")
	carol := p.client(t, "carol")
	aliceTools, bobTools := alice.tools(t), bob.tools(t)
	if !slices.Contains(aliceTools, "ask") || slices.Contains(bobTools, "ask") || !slices.Contains(bobTools, "echo") {
		t.Fatalf("alice sees %v, bob %v; want ask for alice alone, echo for both", aliceTools, bobTools)
	}
	if got := carol.tools(t); len(got) != 0 {
		t.Errorf("carol, without scopes, sees %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := bob.sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "fix:ask") {
		t.Errorf("bob's call of ask: %v; want a refusal naming fix:ask", err)
	}

	// 5 calls a minute each: alice's sixth is refused, bob's first is not.
	echo := func(s *scoped) (string, bool) {
		res, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	for i := range 5 {
		if text, isErr := echo(alice); isErr {
			t.Fatalf("alice's call %d: %q", i+1, text)
		}
	}
	if text, isErr := echo(alice); !isErr || !strings.Contains(text, "5/m") {
		t.Errorf("alice's sixth call: %q (error %v); want the limit named", text, isErr)
	}
	if text, isErr := echo(bob); isErr {
		t.Errorf("bob's call while alice is limited: %q", text)
	}

	// The rule that hid ask goes: bob is told, alice (who saw it) is not.
	p.rewrite(t, map[string]any{"allowScopes": []string{"fix:use"}, "rateLimit": "5/m"})
	select {
	case <-bob.changed:
	case <-time.After(wait):
		t.Fatal("bob was not told that his tools changed")
	}
	if !slices.Contains(bob.tools(t), "ask") {
		t.Error("bob does not see ask after the reload")
	}
	alice.tools(t)
	if n := alice.changes.Load(); n != 0 {
		t.Errorf("alice, whose tools did not change, was told %d times", n)
	}
	// The reload kept the server running, and the callers' allowance.
	if n := len(p.started(t)); n > 3 {
		t.Errorf("%d backend processes after a policy reload, want the same as before", n)
	}
	if text, isErr := echo(alice); !isErr {
		t.Errorf("alice's call after the reload: %q; her allowance was reset", text)
	}
}

// A client's traceparent reaches a stdio backend with the same trace id
// and a new parent span id, and the OTLP receiver gets the spans of the
// front request and the backend call, parent and child.
func TestTraceThroughServeIntoAStdioBackend(t *testing.T) {
	recv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	dir := t.TempDir()
	metaLog := filepath.Join(dir, "meta.log")
	script := fmt.Sprintf("exec %q -session -record-meta 2>>%q", fixture.Build(t), metaLog)
	is := serveIsolated(t, []string{"sh", "-c", script}, map[string]any{"isolation": "shared"})
	sess := is.client(t, "alice", conn.ClassicProtocolVersion)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parent := "00-" + traceID + "-00f067aa0ba902b7-01"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": parent}}); err != nil {
		t.Fatal(err)
	}
	var got string
	deadline := time.Now().Add(wait)
	for got == "" {
		b, _ := os.ReadFile(metaLog)
		var log fixture.MetaLog
		_, _ = log.Write(b)
		for _, r := range log.Records() {
			if r.Method == "tools/call" {
				got = r.MetaString("traceparent")
			}
		}
		if got == "" && time.Now().After(deadline) {
			t.Fatalf("the backend recorded no tools/call within %v:\n%s", wait, b)
		}
		if got == "" {
			time.Sleep(20 * time.Millisecond) // the backend's write, seen from outside it
		}
	}
	parts := strings.Split(got, "-")
	if len(parts) != 4 || parts[1] != traceID || parts[2] == "00f067aa0ba902b7" {
		t.Fatalf("the backend got traceparent %q; want trace %s with a new parent span", got, traceID)
	}
	spans, err := recv.AwaitTrace(ctx, traceID, 2)
	if err != nil {
		t.Fatalf("the receiver got %+v: %v", recv.Spans(), err)
	}
	var request, call *otlptest.Span
	for i, s := range spans {
		if s.TraceID != traceID {
			continue
		}
		switch {
		case s.ParentSpanID == "00f067aa0ba902b7":
			request = &spans[i]
		case strings.HasPrefix(s.Name, "tools/call"):
			call = &spans[i]
		}
	}
	if request == nil || call == nil || call.ParentSpanID != request.SpanID || call.SpanID != parts[2] {
		t.Fatalf("spans %+v; want the front request's under the client's span, and the backend call's under it, whose id the backend got", spans)
	}
}
