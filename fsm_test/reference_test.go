package fsm_test

// Go counterparts of the reference implementation's tests whose names are
// not already in the other files (see docs/reliability.md for the map).

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
)

func TestDisposeDuringInitialSyncLeaksNoTools(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small), holdFirstList())
	release := h.release
	h.waitListEntered()
	h.close()
	release()
	h.expect(conn.Disposing, conn.Disposed)
	if regs := h.drainRegs(); len(regs) != 0 {
		t.Errorf("registered %v during a disposed initial sync", regs)
	}
	if lines := h.rec.Logs(slog.LevelWarn); len(lines) != 0 {
		t.Errorf("warn/error logs = %v, want none", lines)
	}
}

// A transport closing while its connect resolves registers nothing, and the
// failure (the list error racing the session's end) schedules exactly one
// retry.
func TestTransportClosingDuringResolvingConnectRegistersNothingAndRetriesOnce(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small), holdFirstList())
	release := h.release
	h.waitListEntered()
	h.crash()
	tr := h.expect(conn.FailedRetrying)[0]
	release()
	if tr.Attempt != 1 {
		t.Errorf("attempt = %d, want 1", tr.Attempt)
	}
	if regs := h.drainRegs(); len(regs) != 0 {
		t.Errorf("registered %v from a generation that never came up", regs)
	}
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	h.noTransition()
	opens := h.srv.Opens()
	if opens != 2 {
		t.Errorf("opened %d generations, want 2 (exactly one retry)", opens)
	}
}

func TestResyncFailingBecauseDisposeClosedTransportStaysSilent(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	release := h.holdLists()
	h.addTool("b")
	h.waitListEntered()
	h.close()
	release()
	h.expect(conn.Disposing, conn.Disposed)
	if lines := h.rec.Logs(slog.LevelWarn); len(lines) != 0 {
		t.Errorf("warn/error logs = %v, want none", lines)
	}
}

// Giving up behind an in-flight re-sync removes what that sync would
// publish: its result arrives after exhaustion and is fenced out.
func TestGivingUpBehindInFlightResyncRemovesWhatItPublishes(t *testing.T) {
	one := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 1}
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(one))
	h.expect(conn.Established)
	h.crash()
	h.expect(conn.LostReconnecting)
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	h.drainRegs()
	release := h.holdLists()
	h.addTool("b")
	h.waitListEntered()
	h.crash()
	h.expect(conn.Exhausted)
	release()
	h.close() // quiesces: the re-sync's result reaches the loop first
	h.expect(conn.Disposing, conn.Disposed)
	if regs := h.drainRegs(); len(regs) != 0 {
		t.Errorf("registered %v after giving up", regs)
	}
	if diff := cmp.Diff([]string(nil), h.toolNames()); diff != "" {
		t.Errorf("tools after exhaustion (-want +got):\n%s", diff)
	}
}

// Strict startup registration survives a list_changed that arrives during
// the first connect: the attempt still owns startup, and the change is
// synced once the connection is up.
func TestEarlyListChangedIsSyncedAfterConnect(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small), holdFirstList())
	release := h.release
	h.waitListEntered()
	// The session is initialized; the first list is in flight. A change now
	// must not be lost, and must not be treated as the attempt's sync.
	h.addTool("late")
	release()
	h.expect(conn.Established)
	h.waitRegistered("mcp__fx__late")
	if err := h.sup.Ready(context.Background()); err != nil {
		t.Errorf("Ready = %v", err)
	}
}
