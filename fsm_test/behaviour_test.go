package fsm_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The default schedule: a server that never comes up is tried 1 +
// MaxAttempts times over 151.5 s of delays, then exhausted.
func TestNeverUpDefaultScheduleExhaustsAfter151_5s(t *testing.T) {
	h := newHarness(t, []behaviour{refuse}, []string{"echo"}) // nil Reconnect: policy.Default()
	start := h.clk.Now()
	var delays []time.Duration
	for {
		tr := h.next()
		if tr.To == conn.Exhausted {
			break
		}
		if tr.To == conn.FailedRetrying {
			delays = append(delays, tr.Delay)
			h.advance(tr.Delay)
		}
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if diff := cmp.Diff(want, delays); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if got := h.clk.Now().Sub(start); got != 151500*time.Millisecond {
		t.Errorf("time to exhaustion = %v, want 151.5s", got)
	}
	opens := h.srv.Opens()
	if opens != 1+policy.Default().MaxAttempts {
		t.Errorf("attempts = %d, want 1 + MaxAttempts = %d", opens, 1+policy.Default().MaxAttempts)
	}
	st := h.sup.Status()
	var ferr *conn.FailedError
	if st.State != conn.Exhausted || !errors.As(st.LastErr, &ferr) {
		t.Errorf("status = %+v, want exhausted with a *FailedError", st)
	}
}

// A recovered, unchanged tool list yields identical definitions, and a tool
// value kept from the old generation stays routed to it: inert.
func TestUnchangedToolListIsIdenticalAndStaleToolsAreInert(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a", "b"}, withPolicy(small))
	h.expect(conn.Established)
	before := h.reg.Tools()
	h.crash()
	h.expect(conn.LostReconnecting)
	// During the outage the last good tools stay registered and fail fast.
	_, err := h.reg.Call(context.Background(), "mcp__fx__a", nil)
	if !errors.Is(err, conn.ErrUnavailable) {
		t.Fatalf("call during outage: err = %v, want ErrUnavailable", err)
	}
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	after := h.reg.Tools()
	if diff := cmp.Diff(before, after, cmpopts.IgnoreUnexported(conn.Tool{})); diff != "" {
		t.Errorf("tools changed across recovery (-before +after):\n%s", diff)
	}
	if _, err := before[0].Call(context.Background(), nil); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("stale generation's tool: err = %v, want ErrUnavailable", err)
	}
	if _, err := after[0].Call(context.Background(), nil); err != nil {
		t.Errorf("current generation's tool: %v", err)
	}
}

func TestListChangedResyncs(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	h.addTool("b")
	h.waitRegistered("mcp__fx__b")
	if diff := cmp.Diff([]string{"mcp__fx__a", "mcp__fx__b"}, h.toolNames()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	h.srv.MCP.RemoveTools("a")
	h.addTool("c")
	h.waitRegistered("mcp__fx__c")
	// A storm settles on the server's final list.
	for _, n := range []string{"d", "e", "f", "g"} {
		h.addTool(n)
	}
	h.waitRegistered("mcp__fx__g")
	for h.toolNames()[len(h.toolNames())-1] != "mcp__fx__g" {
		h.waitRegistered("mcp__fx__g")
	}
	h.noTransition()
}

// Strict startup: the first attempt's failure is Start's error, and nothing
// is left running (goleak checks at the end of the package).
func TestStrictStartupFailsAndLeavesNothingRunning(t *testing.T) {
	reg := conn.NewRegistry()
	_, err := conn.Start(context.Background(), conn.Config{
		Name:               "fx",
		Transport:          conn.TransportFunc(func(context.Context) (mcp.Transport, error) { return nil, errors.New("initialize refused") }),
		Registry:           reg,
		FailOnStartupError: true,
		Clock:              clock.NewMock(),
		Logger:             conntest.NewRecorder().Logger(),
	})
	var ferr *conn.FailedError
	if !errors.As(err, &ferr) || ferr.Attempt != 0 {
		t.Fatalf("Start err = %v, want a *FailedError of the initial attempt", err)
	}
	// The name is free again.
	if _, err := reg.Reserve("fx"); err != nil {
		t.Errorf("name still reserved after failed strict start: %v", err)
	}
}

func TestStrictStartupSucceeds(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, strict())
	// Start returned only after the first attempt: the tools are there.
	if diff := cmp.Diff([]string{"mcp__fx__a"}, h.toolNames()); diff != "" {
		t.Errorf("tools right after strict Start (-want +got):\n%s", diff)
	}
	h.expect(conn.Established)
}

func TestDuplicateServerNameRejected(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"})
	_, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: h.srv.Transport(), Registry: h.reg, Clock: h.clk,
	})
	if !errors.Is(err, conn.ErrDuplicateServer) {
		t.Fatalf("second supervisor: err = %v, want ErrDuplicateServer", err)
	}
}

// No replacement before a failed generation reports closed; once it does,
// the backoff starts.
func TestNoReplacementBeforeFailedGenerationReportsClosed(t *testing.T) {
	h := newHarness(t, []behaviour{heldRefuse, accept}, []string{"a"}, withPolicy(small))
	ht := h.nextHeld()
	<-ht.Terminated()
	h.noTransition() // still connecting: the barrier holds
	ht.Release()
	h.expect(conn.FailedRetrying)
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
}

// Stop when the close signal never comes: halted, and nothing is ever
// started again.
func TestStopWhenCloseSignalNeverComes(t *testing.T) {
	h := newHarness(t, []behaviour{heldRefuse, accept}, []string{"a"}, withPolicy(small))
	ht := h.nextHeld()
	<-ht.Terminated()
	h.advance(conn.DefaultCloseTimeout)
	tr := h.expect(conn.Halted)[0]
	var ferr *conn.FailedError
	if !errors.As(tr.Err, &ferr) {
		t.Errorf("halted err = %v, want *FailedError", tr.Err)
	}
	h.advance(time.Hour)
	opens := h.srv.Opens()
	if opens != 1 {
		t.Errorf("opened %d transports, want 1", opens)
	}
	lines := h.rec.Logs(slog.LevelError)
	if len(lines) != 1 || lines[0].Msg != "server process did not exit; reconnect halted: it did not exit within CloseTimeout (5s); not reconnecting, to avoid two server processes at once; fix the server, then reload its configuration or restart the host; cause: initialize: initialize refused" {
		t.Errorf("error logs = %v", lines)
	}
	ht.Release() // let the stuck shutdown finish for the leak check
}

// Disposal is bounded when the close signal never comes, and says so.
func TestDisposalBoundedWhenCloseNeverReported(t *testing.T) {
	h := newHarness(t, []behaviour{held}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	ht := h.nextHeld()
	errc := make(chan error, 1)
	go func() { errc <- h.sup.Close(context.Background()) }()
	<-ht.Terminated()
	h.expect(conn.Disposing)
	h.advance(conn.DefaultCloseTimeout)
	select {
	case err := <-errc:
		if !errors.Is(err, conn.ErrIncompleteShutdown) {
			t.Errorf("Close = %v, want ErrIncompleteShutdown", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Close did not return after CloseTimeout")
	}
	h.expect(conn.Disposed)
	// A host that ignores Close's error still learns it from the log.
	want := "shutdown may be incomplete: a server process did not exit within CloseTimeout (5s); check for a leftover process"
	if lines := h.rec.Logs(slog.LevelError); len(lines) != 1 || lines[0].Msg != want {
		t.Errorf("error logs = %v, want [%s]", lines, want)
	}
	ht.Release()
}

// Disposal owns a pending connect: no failure is reported for it, no retry.
func TestDisposalDuringConnectIsSilent(t *testing.T) {
	h := newHarness(t, []behaviour{hang}, []string{"a"}, withPolicy(small))
	h.waitOpened()
	h.close()
	h.expect(conn.Disposing, conn.Disposed)
	if lines := h.rec.Logs(slog.LevelWarn); len(lines) != 0 {
		t.Errorf("warn/error logs = %v, want none", lines)
	}
	if err := h.sup.Ready(context.Background()); !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Ready = %v, want ErrClosed", err)
	}
}

// Close after dispose schedules nothing and Close is idempotent.
func TestCloseAfterDisposeSchedulesNothing(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	h.close()
	h.expect(conn.Disposing, conn.Disposed)
	h.close()
	h.advance(time.Hour)
	h.noTransition()
	if n := len(h.reg.Tools()); n != 0 {
		t.Errorf("%d tools left registered after Close", n)
	}
	if _, err := h.reg.Reserve("fx"); err != nil {
		t.Errorf("name still reserved after Close: %v", err)
	}
}

func TestInvalidConfigNamesTheField(t *testing.T) {
	tr := conn.TransportFunc(func(context.Context) (mcp.Transport, error) { return nil, errors.New("unused") })
	bad := policy.Policy{Enabled: true, InitialDelay: 0, MaxDelay: time.Second, MaxAttempts: 1}
	tests := []struct {
		name  string
		cfg   conn.Config
		field string
	}{
		{"empty name", conn.Config{Transport: tr, Registry: conn.NewRegistry()}, "Name"},
		{"bad name", conn.Config{Name: "a b", Transport: tr, Registry: conn.NewRegistry()}, "Name"},
		{"double underscore", conn.Config{Name: "a__b", Transport: tr, Registry: conn.NewRegistry()}, "Name"},
		{"no transport", conn.Config{Name: "a", Registry: conn.NewRegistry()}, "Transport"},
		{"no registry", conn.Config{Name: "a", Transport: tr}, "Registry"},
		{"bad policy", conn.Config{Name: "a", Transport: tr, Registry: conn.NewRegistry(), Reconnect: &bad}, "Reconnect"},
		{"negative timeout", conn.Config{Name: "a", Transport: tr, Registry: conn.NewRegistry(), CallTimeout: -1}, "CallTimeout"},
		{"negative keepalive", conn.Config{Name: "a", Transport: tr, Registry: conn.NewRegistry(), KeepAlive: -1}, "KeepAlive"},
		{"trailing underscore", conn.Config{Name: "a_", Transport: tr, Registry: conn.NewRegistry()}, "Name"},
		{"empty command", conn.Config{Name: "a", Transport: conn.Command(""), Registry: conn.NewRegistry()}, "Transport"},
		{"bad endpoint", conn.Config{Name: "a", Transport: conn.Streamable("localhost:8080/mcp"), Registry: conn.NewRegistry()}, "Transport"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Start(context.Background(), tc.cfg)
			var cerr *conn.ConfigError
			if !errors.As(err, &cerr) || !errors.Is(err, conn.ErrInvalidConfig) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if cerr.Field != tc.field {
				t.Errorf("field = %q, want %q (err: %v)", cerr.Field, tc.field, err)
			}
		})
	}
}

// A hung call is bounded by CallTimeout on the supervisor's clock, and
// Close retires a hung call at once instead of waiting for it.
func TestHungCallsAreBounded(t *testing.T) {
	// The tool is there before the supervisor starts: a server that
	// answers server/discover with no tools advertises no tools
	// capability, so on protocol 2026-07-28 the supervisor rightly opens
	// no subscription for tool changes, and a tool added after the first
	// listing would never be heard of.
	srv := conntest.NewServer(accept)
	entered := make(chan struct{}, 10)
	srv.MCP.AddTool(&mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	h := newHarnessOn(t, srv, nil, withPolicy(small))
	h.expect(conn.Established)
	h.waitRegistered("mcp__fx__hang")
	call := func() chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := h.reg.Call(context.Background(), "mcp__fx__hang", nil)
			errc <- err
		}()
		select {
		case <-entered:
		case <-time.After(waitLimit):
			t.Fatal("the call never reached the server")
		}
		return errc
	}
	wait := func(errc chan error) error {
		select {
		case err := <-errc:
			return err
		case <-time.After(waitLimit):
			t.Fatal("the hung call did not return")
			return nil
		}
	}
	errc := call()
	h.advance(conn.DefaultCallTimeout - time.Nanosecond)
	select {
	case err := <-errc:
		t.Fatalf("call returned before CallTimeout: %v", err)
	default:
	}
	h.advance(time.Nanosecond)
	if err := wait(errc); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call past CallTimeout: err = %v, want DeadlineExceeded", err)
	}
	errc = call()
	h.close()
	if err := wait(errc); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("call across Close: err = %v, want ErrUnavailable", err)
	}
}

// stuckTransport connects like its inner transport, but its connection's
// Close blocks until release: a session whose Close never returns, as an
// HTTP server that hangs on the session's DELETE would make it.
type stuckTransport struct {
	mcp.Transport
	release chan struct{}
}

func (t stuckTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return stuckConn{c, t.release}, nil
}

type stuckConn struct {
	mcp.Connection
	release chan struct{}
}

func (c stuckConn) Close() error {
	<-c.release
	return c.Connection.Close()
}

// Disposal is bounded by CloseTimeout even when a session's Close never
// returns, and reports the incomplete shutdown instead of hanging.
func TestDisposalBoundedWhenSessionCloseHangs(t *testing.T) {
	srv := conntest.NewServer(conntest.Accept)
	srv.AddEchoTool("a")
	release := make(chan struct{})
	rec := conntest.NewRecorder()
	clk := clock.NewMock()
	inner := srv.Transport()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Registry: conn.NewRegistry(), Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
		Transport: conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
			tr, err := inner.Open(ctx)
			if err != nil {
				return nil, err
			}
			return stuckTransport{tr, release}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer close(release) // let the stuck Close finish for the leak check
	rec.Expect(t, waitLimit, conn.Established)
	errc := make(chan error, 1)
	go func() { errc <- sup.Close(context.Background()) }()
	rec.Expect(t, waitLimit, conn.Disposing)
	clk.Add(conn.DefaultCloseTimeout)
	select {
	case err := <-errc:
		if !errors.Is(err, conn.ErrIncompleteShutdown) {
			t.Errorf("Close = %v, want ErrIncompleteShutdown", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Close hung on a session whose Close never returns")
	}
	rec.Expect(t, waitLimit, conn.Disposed)
}

// KeepAlive notices a hung server within two intervals on the supervisor's
// clock, on both protocol eras (a ping, or a server/discover probe on
// 2026-07-28, which has no ping), even with a call outstanding: the generation ends, the call fails
// with ErrUnavailable, and a fresh generation takes over.
func TestKeepAliveEndsAHungGeneration(t *testing.T) {
	for _, era := range []struct{ name, version, probe string }{
		{"classic", conn.ClassicProtocolVersion, "ping"},
		{"2026-07-28", "", "server/discover"},
	} {
		t.Run(era.name, func(t *testing.T) { keepAliveEndsAHungGeneration(t, era.version, era.probe) })
	}
}

func keepAliveEndsAHungGeneration(t *testing.T, version, probe string) {
	const every = 10 * time.Second
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small),
		func(_ *harness, c *conn.Config) { c.KeepAlive, c.ProtocolVersion = every, version })
	h.expect(conn.Established)
	thaw := h.srv.Freeze()
	defer thaw()
	errc := make(chan error, 1)
	go func() {
		_, err := h.reg.Call(context.Background(), "mcp__fx__a", nil)
		errc <- err
	}()
	if m := waitFor(h.t, h.srv.Stalled(), "the call at the hung server"); m != "tools/call" {
		t.Fatalf("first stalled request: %s", m)
	}
	h.advance(every) // the ping is sent, and stalls
	if m := waitFor(h.t, h.srv.Stalled(), "the probe at the hung server"); m != probe {
		t.Fatalf("second stalled request: %s", m)
	}
	h.noTransition()
	h.advance(every) // the ping times out
	tr := h.expect(conn.LostReconnecting)[0]
	var lerr *conn.LostError
	if !errors.As(tr.Err, &lerr) || !strings.Contains(tr.Err.Error(), "keep-alive "+probe+" got no answer within KeepAlive (10s)") {
		t.Errorf("lost err = %v", tr.Err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, conn.ErrUnavailable) {
			t.Errorf("outstanding call: err = %v, want ErrUnavailable", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the outstanding call did not end with its generation")
	}
	thaw()
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
}

// A hang noticed by KeepAlive is charged from the last answer, not from
// when the unanswered ping was sent: a server that hangs as soon as it is
// up never earns the stability window, however long the interval, so a
// crash loop of such servers exhausts the budget.
func TestKeepAliveHangEarnsNoUptime(t *testing.T) {
	const every = 10 * time.Second // longer than the 5s stability window
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 5 * time.Second, MaxAttempts: 3}
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(p),
		func(_ *harness, c *conn.Config) { c.KeepAlive = every })
	var attempts []int
	for range 2 {
		h.expect(conn.Established)
		thaw := h.srv.Freeze()
		h.advance(every) // the probe is sent, and stalls
		// The previous round's cancelled probe may stall too: skip it.
		// (The default protocol, 2026-07-28, probes with server/discover.)
		for m := ""; m != "server/discover"; m = waitFor(h.t, h.srv.Stalled(), "the probe at the hung server") {
		}
		h.advance(every) // the ping times out
		attempts = append(attempts, h.expect(conn.LostReconnecting)[0].Attempt)
		thaw()
		h.advance(p.MaxDelay)
		h.expect(conn.Connecting)
	}
	if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
		t.Errorf("attempts charged to the two hangs (-want +got):\n%s", diff)
	}
}
