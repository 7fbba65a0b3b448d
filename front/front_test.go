//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded, and tested.

package front

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const limit = 10 * time.Second

// testBackend is one supervised conntest server.
type testBackend struct {
	srv *conntest.Server
	sup *conn.Supervisor
	rec *conntest.Recorder
}

// rig is a front over two backends, a and b, on a mock clock, and a
// client session to it.
type rig struct {
	clk      *clock.Mock
	front    *Front
	reg      *conn.ToolRegistry
	backends map[string]*testBackend
	sess     *mcp.ClientSession
	client   *mcp.Client
	changes  chan struct{} // one value per tools/list_changed received
	count    atomic.Int32
}

func newRig(t *testing.T) *rig { return newRigWith(t, rigOptions{}) }

// rigOptions vary a rig: the backends' server options and setup, a
// catalog, and the front client's options (its ToolListChangedHandler is
// the rig's).
type rigOptions struct {
	serverOpts func(name string) *mcp.ServerOptions
	setup      func(name string, srv *conntest.Server)
	catalog    *conn.Catalog
	ready      func() bool // before the front serves, wait until it holds
	client     *mcp.ClientOptions
	sessOpts   *mcp.ClientSessionOptions
	roots      []*mcp.Root //lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.
	audit      *audit.Log
	names      Names
	logger     *slog.Logger
	protocol   string // the backends' Config.ProtocolVersion
}

func newRigWith(t *testing.T, o rigOptions) *rig {
	t.Helper()
	r := &rig{clk: clock.NewMock(), reg: conn.NewRegistry(), backends: map[string]*testBackend{}, changes: make(chan struct{}, 100)}
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	bs := newFakeBackends()
	f := New(Options{Registry: r.reg, Clock: r.clk, Catalog: o.catalog, Audit: o.audit, Names: o.names, Logger: o.logger, Backends: bs})
	r.front = f
	for _, name := range []string{"a", "b"} {
		var so *mcp.ServerOptions
		if o.serverOpts != nil {
			so = o.serverOpts(name)
		}
		b := &testBackend{srv: conntest.NewServerWithOptions(so, conntest.Accept), rec: conntest.NewRecorder()}
		b.srv.AddEchoTool("echo")
		if o.setup != nil {
			o.setup(name, b.srv)
		}
		sup, err := conn.Start(context.Background(), conn.Config{
			Name: name, Transport: b.srv.Transport(), Registry: r.reg, Reconnect: &p, Clock: r.clk,
			Logger: b.rec.Logger(), OnTransition: func(t conn.Transition) { b.rec.OnTransition(t); f.Observe(t) }, Catalog: o.catalog,
			Client: f.ClientOptionsFor(name), ClientMiddleware: f.ClientMiddlewareFor(name), ProtocolVersion: o.protocol,
		})
		if err != nil {
			t.Fatal(err)
		}
		b.sup = sup
		bs.set(name, sup)
		b.rec.Expect(t, limit, conn.Established)
		r.backends[name] = b
		t.Cleanup(func() {
			_ = sup.Close(context.Background())
			b.srv.Close()
		})
	}
	if o.ready != nil && o.catalog != nil {
		for !o.ready() {
			select {
			case <-o.catalog.Changed():
			case <-time.After(limit):
				t.Fatal("the catalog did not become ready")
			}
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Run(ctx, st) }()
	copts := o.client
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		r.count.Add(1)
		r.changes <- struct{}{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, copts)
	client.AddRoots(o.roots...)
	r.client = client
	sess, err := client.Connect(ctx, ct, o.sessOpts)
	if err != nil {
		t.Fatal(err)
	}
	r.sess = sess
	t.Cleanup(func() {
		_ = sess.Close()
		cancel()
		if err := <-served; err != nil && ctx.Err() == nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func (r *rig) tools(t *testing.T) []string {
	t.Helper()
	res, err := r.sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func (r *rig) call(t *testing.T, name string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := r.sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call %s: protocol error %v", name, err)
	}
	b, _ := json.Marshal(res.Content)
	var parts []struct{ Text string }
	_ = json.Unmarshal(b, &parts)
	if len(parts) != 1 {
		t.Fatalf("call %s: content %s", name, b)
	}
	return parts[0].Text, res.IsError
}

func TestOutageAndRecovery(t *testing.T) {
	r := newRig(t)
	if diff := cmp.Diff([]string{"mcp__a__echo", "mcp__b__echo"}, r.tools(t)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if text, isErr := r.call(t, "mcp__a__echo"); isErr || text != "echo ok" {
		t.Fatalf("call before the crash = %q, isError %v", text, isErr)
	}

	a := r.backends["a"]
	a.srv.Crash()
	a.rec.Expect(t, limit, conn.LostReconnecting)
	r.clk.Add(400 * time.Millisecond)
	text, isErr := r.call(t, "mcp__a__echo")
	want := `server "a": connection lost; reconnecting in 600ms (attempt 1/3); tool "mcp__a__echo" was not called; try again after the next attempt`
	if !isErr || text != want {
		t.Errorf("call during the outage = %q, isError %v; want %q", text, isErr, want)
	}
	if text, isErr := r.call(t, "mcp__b__echo"); isErr || text != "echo ok" {
		t.Errorf("the other server's call = %q, isError %v", text, isErr)
	}

	r.clk.Add(600 * time.Millisecond)
	a.rec.Expect(t, limit, conn.Connecting, conn.Established)
	if text, isErr := r.call(t, "mcp__a__echo"); isErr || text != "echo ok" {
		t.Errorf("call after recovery = %q, isError %v", text, isErr)
	}
	// Same tools after the reconnect: the union did not change.
	if diff := cmp.Diff([]string{"mcp__a__echo", "mcp__b__echo"}, r.tools(t)); diff != "" {
		t.Fatalf("tools after recovery (-want +got):\n%s", diff)
	}

	// b gives up: its tools go, and that is the first list change.
	b := r.backends["b"]
	b.srv.Plan(conntest.Refuse)
	b.srv.Crash()
	b.rec.Expect(t, limit, conn.LostReconnecting)
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		r.clk.Add(d)
		b.rec.Expect(t, limit, conn.Connecting, conn.FailedRetrying)
	}
	r.clk.Add(4 * time.Second)
	b.rec.Expect(t, limit, conn.Connecting, conn.Exhausted)
	select {
	case <-r.changes:
	case <-time.After(limit):
		t.Fatal("no tools/list_changed after b gave up")
	}
	if n := r.count.Load(); n != 1 {
		t.Errorf("%d tools/list_changed notifications, want 1: a reconnect that lists the same tools changes nothing", n)
	}
	if diff := cmp.Diff([]string{"mcp__a__echo"}, r.tools(t)); diff != "" {
		t.Errorf("tools after b gave up (-want +got):\n%s", diff)
	}
}

func TestDescribe(t *testing.T) {
	clk := clock.NewMock()
	now := clk.Now()
	tests := []struct {
		st   conn.Status
		want string
	}{
		{conn.Status{State: conn.FailedRetrying, Attempt: 2, MaxAttempts: 10, NextRetry: now.Add(12345 * time.Millisecond), Protocol: "2025-11-25"},
			`server "s": connection failed; retrying in 12s (attempt 2/10); tool "t" was not called; try again after the next attempt`},
		{conn.Status{State: conn.Connecting, Attempt: 3, MaxAttempts: 10, Protocol: "2025-11-25"},
			`server "s": reconnecting now (attempt 3/10); tool "t" was not called; try again after the next attempt`},
		{conn.Status{State: conn.LostDisabled},
			`server "s": connection lost and reconnect is disabled; tool "t" was not called; mcpfsm will not reconnect: fix the server, then restart mcpfsm`},
		{conn.Status{State: conn.Disposing},
			`server "s": disposing; tool "t" was not called; mcpfsm is shutting down`},
	}
	for _, tt := range tests {
		bs := newFakeBackends()
		bs.status = func(string) (conn.Status, bool) { return tt.st, true }
		f := New(Options{Registry: conn.NewRegistry(), Clock: clk, Backends: bs})
		if got := f.describe(backend{server: "s", f: f}, toolOp("t"), nil, ""); got != tt.want {
			t.Errorf("describe(%s) =\n%q, want\n%q", tt.st.State, got, tt.want)
		}
	}
}

// A tool that left the registry after the client listed it answers with
// an error result naming the server's state.
func TestCallOfAGoneTool(t *testing.T) {
	bs := newFakeBackends()
	bs.status = func(string) (conn.Status, bool) { return conn.Status{State: conn.Exhausted}, true }
	f := New(Options{Registry: conn.NewRegistry(), Backends: bs})
	c := f.newClient(sessionClient, authz.Caller{})
	defer c.close()
	res, err := c.handler("mcp__b__echo")(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "mcp__b__echo"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `server "b": giving up; tool "mcp__b__echo": the tool is no longer available; mcpfsm will not reconnect: fix the server, then restart mcpfsm`
	if !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != want {
		t.Errorf("result %+v, want the error %q", res, want)
	}
}

// A failed call waits for the supervisor to register the loss, and
// returns once it has.
func TestAwaitLoss(t *testing.T) {
	clk := clock.NewMock()
	var state atomic.Value
	state.Store(conn.Established)
	bs := newFakeBackends()
	bs.status = func(string) (conn.Status, bool) { return conn.Status{State: state.Load().(conn.State)}, true }
	f := New(Options{Registry: conn.NewRegistry(), Clock: clk, Backends: bs})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.awaitLoss(context.Background(), backend{server: "s", f: f})
	}()
	f.Observe(conn.Transition{}) // a transition that leaves it established: keep waiting
	state.Store(conn.LostReconnecting)
	f.Observe(conn.Transition{To: conn.LostReconnecting})
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatal("awaitLoss did not return after the loss")
	}

}
