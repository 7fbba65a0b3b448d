package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
)

// startFleet starts the servers of the config at path as run does.
func startFleet(t *testing.T, path string) (*fleet, *conn.ToolRegistry) {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := conn.NewRegistry()
	fl := &fleet{path: path, reg: reg, opts: startOptions{logger: slog.New(slog.DiscardHandler)}}
	fl.set(startAll(t.Context(), cfg.Servers, reg, fl.opts))
	t.Cleanup(func() {
		if err := fl.closeEvery(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, st := range fl.running() {
		if err := st.sup.Ready(t.Context()); err != nil {
			t.Fatalf("%s: %v", st.srv.Name, err)
		}
	}
	return fl, reg
}

func rewrite(t *testing.T, path string, cfg any) {
	t.Helper()
	data, err := json.MarshalIndent(cfg, "", "    ") // other whitespace than writeConfig's
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An unchanged config, rewritten, changes nothing: same supervisors,
// same processes, and not one change of the tool set.
func TestReloadUnchangedTouchesNothing(t *testing.T) {
	logA := filepath.Join(t.TempDir(), "a.pids")
	cfg := obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA), "b": fixtureServer(t)}}
	path := writeConfig(t, cfg)
	fl, reg := startFleet(t, path)
	before := fl.running()
	changed := reg.Changed()
	rewrite(t, path, cfg)
	if err := fl.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after := fl.running(); !slices.Equal(before, after) {
		t.Errorf("the running set changed: %v -> %v", before, after)
	}
	select {
	case <-changed:
		t.Error("the tool set changed (a client would get tools/list_changed)")
	default:
	}
	if got := pids(t, logA); len(got) != 1 || !alive(got[0]) {
		t.Errorf("a's processes: %v, want one, still running", got)
	}
}

// A changed server restarts (a new process after the old one is gone);
// the others keep theirs.
func TestReloadRestartsChanged(t *testing.T) {
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.pids"), filepath.Join(dir, "b.pids")
	path := writeConfig(t, obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA), "b": fixtureServer(t, "-pidlog", logB)}})
	fl, _ := startFleet(t, path)
	supA := fl.running()[0].sup
	oldB := pids(t, logB)
	rewrite(t, path, obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA), "b": fixtureServer(t, "-pidlog", logB, "-tools", "2")}})
	if err := fl.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fl.running()[0].sup != supA {
		t.Error("the unchanged server a got a new supervisor")
	}
	b := fl.running()[1]
	if err := b.sup.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	newB := pids(t, logB)
	if len(newB) != 2 || alive(oldB[0]) || !alive(newB[1]) {
		t.Errorf("b's processes %v (first alive %v), want the first gone and a second running", newB, alive(oldB[0]))
	}
	if n := len(b.sup.Status().Tools); n < 3 {
		t.Errorf("b has %d tools after its restart with -tools 2", n)
	}
}

func TestReloadBrokenConfigKeepsRunning(t *testing.T) {
	path := writeConfig(t, obj{"mcpServers": obj{"a": fixtureServer(t)}})
	fl, _ := startFleet(t, path)
	before := fl.running()
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": 3}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := fl.Reload(t.Context())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "the running servers are unchanged") {
		t.Errorf("Reload: %v; want an error naming %s and saying nothing changed", err, path)
	}
	if after := fl.running(); !slices.Equal(before, after) || after[0].sup.Status().State != conn.Established {
		t.Errorf("the running set changed after a broken reload")
	}
	if err := fl.closeEvery(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := fl.Reload(t.Context()); !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Reload after the final close: %v, want ErrClosed", err)
	}
}
