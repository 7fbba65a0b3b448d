package e2e_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// resyncLines counts the "tool list changed" log lines by level.
type resyncLines struct {
	mu          sync.Mutex
	info, debug int
	coalesced   int // the sum of the INFO lines' coalesced counts
	wake        chan struct{}
}

func (h *resyncLines) Enabled(context.Context, slog.Level) bool { return true }
func (h *resyncLines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *resyncLines) WithGroup(string) slog.Handler            { return h }
func (h *resyncLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "tool list changed, re-syncing" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level >= slog.LevelInfo {
		h.info++
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "coalesced" {
				h.coalesced += int(a.Value.Int64())
			}
			return true
		})
	} else {
		h.debug++
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return nil
}

func (h *resyncLines) counts() (info, debug, coalesced int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.info, h.debug, h.coalesced
}

// TestListChangedFloodLogsAtMostOneLineASecond: a server that changes its
// tool list every 15 ms gets one INFO line a second about it, each saying
// how many changes it stands for; the rest are at DEBUG.
func TestListChangedFloodLogsAtMostOneLineASecond(t *testing.T) {
	e := newEnv(t)
	lines := &resyncLines{wake: make(chan struct{}, 1)}
	e.start(conn.Config{Transport: e.command("-list-changed-every", "15ms"), Reconnect: fast(3), Logger: slog.New(lines)})
	e.rec.Await(t, wait, conn.Established)
	start := time.Now()
	const changes = 40
	deadline := time.After(wait)
	for {
		info, debug, _ := lines.counts()
		if info+debug >= changes {
			break
		}
		select {
		case <-lines.wake:
		case <-deadline:
			t.Fatalf("only %d re-sync lines within %v", info+debug, wait)
		}
	}
	elapsed := time.Since(start)
	info, debug, coalesced := lines.counts()
	t.Logf("%d INFO lines (standing for %d more) and %d DEBUG lines in %v", info, coalesced, debug, elapsed)
	if limit := int(elapsed/time.Second) + 2; info > limit {
		t.Errorf("%d INFO re-sync lines in %v, want at most %d", info, elapsed, limit)
	}
	if debug == 0 {
		t.Error("no line was coalesced")
	}
}
