package fsm_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// plainRegistry offers only conn.Registry's one method, as a host's own
// registry might: the supervisor then swaps tool by tool, and must still
// be all or nothing.
type plainRegistry struct {
	r    *conn.ToolRegistry
	regs chan string
}

func (p plainRegistry) Register(t conn.Tool) (func(), error) {
	un, err := p.r.Register(t)
	if err == nil {
		p.regs <- t.Name
	}
	return un, err
}

func TestPlainRegistrySwapRollsBackOnConflict(t *testing.T) {
	srv := conntest.NewServer(conntest.Accept)
	srv.AddEchoTool("a")
	srv.AddEchoTool("b")
	rec := conntest.NewRecorder()
	reg := conn.NewRegistry()
	regs := make(chan string, 100)
	clk := clock.NewMock()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: plainRegistry{reg, regs},
		Reconnect: &small, Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer sup.Close(context.Background())
	rec.Expect(t, waitLimit, conn.Established)

	// Another server holds the name the next tool would take.
	if _, err := reg.Register(conn.Tool{Name: "mcp__fx__c", Server: "other"}); err != nil {
		t.Fatal(err)
	}
	srv.AddEchoTool("c")
	// Registered once at start, once by the swap before c is refused, and
	// once more when the rollback restores the previous generation.
	for seen := map[string]int{}; seen["mcp__fx__a"] < 3 || seen["mcp__fx__b"] < 3; {
		seen[waitFor(t, regs, "re-registration")]++
	}
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Name+"@"+tool.Server)
	}
	if diff := cmp.Diff([]string{"mcp__fx__a@fx", "mcp__fx__b@fx", "mcp__fx__c@other"}, names); diff != "" {
		t.Errorf("registry after a refused swap (-want +got):\n%s", diff)
	}
	// The rollback re-registers before the failure is logged: wait for the line.
	rec.WaitLog(t, waitLimit, slog.LevelError, "tool re-sync failed: ")
	errs := rec.Logs(slog.LevelError)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Msg, "tool re-sync failed: register tool \"mcp__fx__c\": tool name already registered") {
		t.Errorf("error logs = %v", errs)
	}
	// The previous generation still serves its calls.
	if _, err := reg.Call(context.Background(), "mcp__fx__a", nil); err != nil {
		t.Errorf("call after rollback: %v", err)
	}
	// And a recovery through the plain registry swaps cleanly.
	srv.Crash()
	rec.Expect(t, waitLimit, conn.LostReconnecting)
	srv.MCP.RemoveTools("c")
	clk.Add(time.Second)
	rec.Expect(t, waitLimit, conn.Connecting, conn.Established)
	if _, err := reg.Call(context.Background(), "mcp__fx__b", nil); err != nil {
		t.Errorf("call after recovery: %v", err)
	}
}
