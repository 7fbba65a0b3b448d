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
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// squatted returns a registry where another server holds mcp__fx__a.
func squatted(t *testing.T) (*conn.ToolRegistry, func()) {
	t.Helper()
	reg := conn.NewRegistry()
	un, err := reg.Register(conn.Tool{Name: "mcp__fx__a", Server: "other"})
	if err != nil {
		t.Fatal(err)
	}
	return reg, un
}

// toolOwners renders a registry as "name@server" strings.
func toolOwners(reg *conn.ToolRegistry) []string {
	var out []string
	for _, tool := range reg.Tools() {
		out = append(out, tool.Name+"@"+tool.Server)
	}
	return out
}

// A registry conflict on connect keeps the connection with no tools, as
// the reference does, instead of respawning a healthy server: the other
// server's tool is untouched, the error is logged, no process is started
// again, and the tools are registered at the next change of the list once
// the name is free.
func TestRegistryConflictOnConnectKeepsConnectionWithNoTools(t *testing.T) {
	reg, unOther := squatted(t)
	srv := conntest.NewServer(conntest.Accept)
	srv.AddEchoTool("a")
	rec := conntest.NewRecorder()
	clk := clock.NewMock()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: reg, Reconnect: &small,
		Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, waitLimit, conn.Established)
	if err := sup.Ready(context.Background()); err != nil {
		t.Errorf("Ready = %v, want nil: the connection is up", err)
	}
	if diff := cmp.Diff([]string{"mcp__fx__a@other"}, toolOwners(reg)); diff != "" {
		t.Errorf("registry (-want +got):\n%s", diff)
	}
	if got := sup.Status().Tools; len(got) != 0 {
		t.Errorf("Status().Tools = %v, want none", got)
	}
	errs := rec.Logs(slog.LevelError)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Msg, `registering tools failed: register tools: tool name already registered: "mcp__fx__a" is registered by server "other"`) ||
		!strings.HasSuffix(errs[0].Msg, "; connected with no tools until the server's tool list changes") {
		t.Errorf("error logs = %v", errs)
	}
	clk.Add(time.Hour)
	if n := srv.Opens(); n != 1 {
		t.Errorf("opened %d transports, want 1: a naming conflict is no reason to respawn", n)
	}
	rec.NoTransition(t)

	unOther()
	srv.AddEchoTool("b")
	for deadline := time.Now().Add(waitLimit); len(reg.Tools()) != 2; {
		if time.Now().After(deadline) {
			t.Fatalf("tools after the list changed = %v, want a and b", toolOwners(reg))
		}
		<-reg.Changed()
	}
	if diff := cmp.Diff([]string{"mcp__fx__a@fx", "mcp__fx__b@fx"}, toolOwners(reg)); diff != "" {
		t.Errorf("registry after the list changed (-want +got):\n%s", diff)
	}
}

// Strict startup registers the tools or fails Start: a registration
// failure is Start's error, and nothing is left registered or running.
func TestStrictRegistrationFailureRejectsStart(t *testing.T) {
	reg, _ := squatted(t)
	srv := conntest.NewServer(conntest.Accept)
	srv.AddEchoTool("a")
	srv.AddEchoTool("z")
	defer srv.Close()
	_, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: reg, FailOnStartupError: true,
		Clock: clock.NewMock(), Logger: conntest.NewRecorder().Logger(),
	})
	var ferr *conn.FailedError
	if !errors.As(err, &ferr) || !errors.Is(err, conn.ErrToolConflict) {
		t.Fatalf("Start = %v, want a *FailedError wrapping ErrToolConflict", err)
	}
	if diff := cmp.Diff([]string{"mcp__fx__a@other"}, toolOwners(reg)); diff != "" {
		t.Errorf("registry (-want +got):\n%s", diff)
	}
	if _, err := reg.Reserve("fx"); err != nil {
		t.Errorf("name still reserved after a rejected Start: %v", err)
	}
}

// A list_changed that reaches the first attempt under strict startup does
// not take over its registration: the conflict still rejects Start, and no
// re-sync registers anything behind it.
func TestStrictStartupEarlyListChangedAndConflict(t *testing.T) {
	reg, _ := squatted(t)
	srv := conntest.NewServer(conntest.Accept)
	srv.AddEchoTool("a")
	defer srv.Close()
	release := srv.HoldLists()
	defer release()
	rec := conntest.NewRecorder()
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Start(context.Background(), conn.Config{
			Name: "fx", Transport: srv.Transport(), Registry: reg, FailOnStartupError: true,
			Clock: clock.NewMock(), Logger: rec.Logger(),
		})
		errc <- err
	}()
	waitFor(t, srv.ListEntered(), "the first tools/list at the hold")
	srv.AddEchoTool("b") // list_changed while the attempt lists
	release()
	var err error
	select {
	case err = <-errc:
	case <-time.After(waitLimit):
		t.Fatal("Start did not return")
	}
	if !errors.Is(err, conn.ErrToolConflict) {
		t.Fatalf("Start = %v, want ErrToolConflict", err)
	}
	if diff := cmp.Diff([]string{"mcp__fx__a@other"}, toolOwners(reg)); diff != "" {
		t.Errorf("registry (-want +got):\n%s", diff)
	}
	for _, l := range rec.Logs(slog.LevelInfo) {
		if strings.HasPrefix(l.Msg, "tool list changed") {
			t.Errorf("a re-sync started under strict startup: %v", l)
		}
	}
}

// A re-sync whose listing fails (here: no answer within ConnectTimeout)
// logs it and leaves the previous tools registered and the state alone.
func TestResyncListFailureKeepsTools(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	h.holdLists()
	h.addTool("b")
	h.waitListEntered()
	h.advance(conn.DefaultConnectTimeout)
	h.rec.WaitLog(t, waitLimit, slog.LevelError, "tool re-sync failed: list tools: ")
	errs := h.rec.Logs(slog.LevelError)
	if len(errs) != 1 || !strings.HasSuffix(errs[0].Msg, "; the previous tools stay registered") {
		t.Errorf("error logs = %v", errs)
	}
	if diff := cmp.Diff([]string{"mcp__fx__a"}, h.toolNames()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if _, err := h.reg.Call(context.Background(), "mcp__fx__a", nil); err != nil {
		t.Errorf("call after a failed re-sync: %v", err)
	}
	h.noTransition()
}

// TestFailedResyncIsRetried: a re-sync the server did not answer within
// ConnectTimeout is tried again after the policy's first delay, so a
// server that recovers gets its list published without another change
// (conn/sim seed 10522); no transition, the connection stays up.
func TestFailedResyncIsRetried(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	release := h.holdLists()
	h.addTool("b")
	h.waitListEntered()
	h.advance(conn.DefaultConnectTimeout)
	h.rec.WaitLog(t, waitLimit, slog.LevelError, "tool re-sync failed: list tools: ")
	release() // the server answers again; it will send no more list changes
	h.advance(small.InitialDelay)
	h.waitRegistered("mcp__fx__b")
	if diff := cmp.Diff([]string{"mcp__fx__a", "mcp__fx__b"}, h.toolNames()); diff != "" {
		t.Errorf("tools after the retry (-want +got):\n%s", diff)
	}
	h.noTransition()
}

// The info lines of a connect and a reconnect.
func TestInfoLinesConnectedAndReconnected(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	h.crash()
	h.expect(conn.LostReconnecting)
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	var info []string
	for _, l := range h.rec.Logs(slog.LevelInfo) {
		if l.Level == slog.LevelInfo {
			info = append(info, l.Msg)
		}
	}
	want := []string{"connected and registered tools", "reconnected and re-synced tools (attempt 1/3)"}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("info lines (-want +got):\n%s", diff)
	}
}

// Unloading a server mid-outage (Close during the backoff) stops promptly,
// unregisters the tools the outage kept registered, and starts nothing.
func TestUnloadMidOutageUnregistersTools(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	h.crash()
	h.expect(conn.LostReconnecting)
	if diff := cmp.Diff([]string{"mcp__fx__a"}, h.toolNames()); diff != "" {
		t.Errorf("tools during the outage (-want +got):\n%s", diff)
	}
	if _, err := h.reg.Call(context.Background(), "mcp__fx__a", nil); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("call during the outage = %v, want ErrUnavailable", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.sup.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	h.expect(conn.Disposing, conn.Disposed)
	if got := h.toolNames(); len(got) != 0 {
		t.Errorf("tools after unload = %v, want none", got)
	}
	h.advance(time.Hour)
	if n := h.srv.Opens(); n != 1 {
		t.Errorf("opened %d transports, want 1", n)
	}
}
