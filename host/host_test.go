package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

type obj = map[string]any

// fixtureServer is a config entry running the fixture server with args.
func fixtureServer(t *testing.T, args ...string) obj {
	return obj{"command": fixture.Build(t), "args": args,
		"reconnect": obj{"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 5}}
}

func writeFile(t *testing.T, path string, cfg any) {
	t.Helper()
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// started starts a host of the config at path and waits for every server.
func started(t *testing.T, path string) (*Host, *conn.ToolRegistry) {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := conn.NewRegistry()
	h := New(Options{Path: path, Registry: reg})
	if err := h.Start(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if f := h.Failures(); len(f) > 0 {
		t.Fatalf("servers did not come up: %+v", f)
	}
	return h, reg
}

func ready(t *testing.T, h *Host) {
	t.Helper()
	for _, sup := range h.Supervisors() {
		if err := sup.Ready(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// Three successive configs: which processes survive each is decided by
// name and content alone.
func TestApplyThreeConfigs(t *testing.T) {
	dir := t.TempDir()
	log := func(name string) string { return filepath.Join(dir, name+".pids") }
	path := filepath.Join(dir, "servers.json")
	writeFile(t, path, obj{"mcpServers": obj{
		"a": fixtureServer(t, "-pidlog", log("a")), "b": fixtureServer(t, "-pidlog", log("b"))}})
	h, _ := started(t, path)
	a1, b1 := fixture.PIDs(t, log("a")), fixture.PIDs(t, log("b"))

	// 2: a unchanged, b changed, c added.
	writeFile(t, path, obj{"mcpServers": obj{
		"a": fixtureServer(t, "-pidlog", log("a")),
		"b": fixtureServer(t, "-pidlog", log("b"), "-tools", "2"),
		"c": fixtureServer(t, "-pidlog", log("c"))}})
	if err := h.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	ready(t, h)
	if a := fixture.PIDs(t, log("a")); !slices.Equal(a, a1) || !fixture.Alive(a[0]) {
		t.Errorf("a's processes %v, want %v still running", a, a1)
	}
	b2 := fixture.PIDs(t, log("b"))
	if len(b2) != 2 || fixture.Alive(b1[0]) || !fixture.Alive(b2[1]) {
		t.Errorf("b's processes %v: want the first gone, a second running", b2)
	}
	if c := fixture.PIDs(t, log("c")); len(c) != 1 || !fixture.Alive(c[0]) {
		t.Errorf("c's processes %v, want one running", c)
	}

	// 3: a removed, b and c unchanged.
	c2 := fixture.PIDs(t, log("c"))
	ch, err := h.Apply(t.Context(), mustParse(t, obj{"mcpServers": obj{
		"b": fixtureServer(t, "-pidlog", log("b"), "-tools", "2"),
		"c": fixtureServer(t, "-pidlog", log("c"))}}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ch.Removed, []string{"a"}) || !slices.Equal(ch.Unchanged, []string{"b", "c"}) || len(ch.Added)+len(ch.Restarted) != 0 {
		t.Errorf("changes %+v, want a removed, b and c unchanged", ch)
	}
	if a := fixture.PIDs(t, log("a")); fixture.Alive(a[0]) {
		t.Errorf("a's process %d still runs after a was removed", a[0])
	}
	if b := fixture.PIDs(t, log("b")); !slices.Equal(b, b2) || !fixture.Alive(b[1]) {
		t.Errorf("b's processes %v, want %v with the last running", b, b2)
	}
	if c := fixture.PIDs(t, log("c")); !slices.Equal(c, c2) || !fixture.Alive(c[0]) {
		t.Errorf("c's processes %v, want %v running", c, c2)
	}
	var names []string
	for _, s := range h.Status() {
		names = append(names, s.Config.Name)
	}
	if !slices.Equal(names, []string{"b", "c"}) {
		t.Errorf("Status names %v, want [b c]", names)
	}
}

func mustParse(t *testing.T, cfg any) *config.Config {
	t.Helper()
	data, _ := json.Marshal(cfg)
	c, err := config.Parse(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// An unchanged config, rewritten, changes nothing: same supervisors,
// same processes, and not one change of the tool set.
func TestReloadUnchangedTouchesNothing(t *testing.T) {
	logA := filepath.Join(t.TempDir(), "a.pids")
	cfg := obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA), "b": fixtureServer(t)}}
	path := filepath.Join(t.TempDir(), "servers.json")
	writeFile(t, path, cfg)
	h, reg := started(t, path)
	before := h.Supervisors()
	changed := reg.Changed()
	writeFile(t, path, cfg)
	if err := h.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after := h.Supervisors(); !slices.Equal(before, after) {
		t.Errorf("the supervisors changed: %v -> %v", before, after)
	}
	select {
	case <-changed:
		t.Error("the tool set changed (a client would get tools/list_changed)")
	default:
	}
	if got := fixture.PIDs(t, logA); len(got) != 1 || !fixture.Alive(got[0]) {
		t.Errorf("a's processes: %v, want one, still running", got)
	}
}

func TestReloadBrokenConfigKeepsRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers.json")
	writeFile(t, path, obj{"mcpServers": obj{"a": fixtureServer(t)}})
	h, _ := started(t, path)
	before := h.Supervisors()
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": 3}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := h.Reload(t.Context())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "the running servers are unchanged") {
		t.Errorf("Reload: %v; want an error naming %s and saying nothing changed", err, path)
	}
	if after := h.Supervisors(); !slices.Equal(before, after) || after[0].Status().State != conn.Established {
		t.Errorf("the running set changed after a broken reload")
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(t.Context()); !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Reload after the final close: %v, want ErrClosed", err)
	}
}

// Options.Start starts every shared instance, with the config the host
// and Configure assembled; Options.StartInstance every per-client one,
// with its owner's configure applied.
func TestStartHooksStartEverySupervisor(t *testing.T) {
	bin := fixture.Build(t)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`{"servers": {"a": {"command": %q}, "b": {"command": %q}}}`, bin, bin)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var shared, instances []string
	reg := conn.NewRegistry()
	h := New(Options{Registry: reg,
		Configure: func(server string, c *conn.Config) { c.MaxConcurrentCalls = 7 },
		Start: func(ctx context.Context, c conn.Config) (*conn.Supervisor, error) {
			mu.Lock()
			shared = append(shared, fmt.Sprintf("%s limit %d own registry %v", c.Name, c.MaxConcurrentCalls, c.Registry == reg))
			mu.Unlock()
			return conn.Start(ctx, c)
		},
		StartInstance: func(ctx context.Context, c conn.Config) (*conn.Supervisor, error) {
			mu.Lock()
			instances = append(instances, fmt.Sprintf("%s limit %d own registry %v", c.Name, c.MaxConcurrentCalls, c.Registry == reg))
			mu.Unlock()
			return conn.Start(ctx, c)
		}})
	if err := h.Start(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	sup, err := h.StartInstance(t.Context(), "b", func(c *conn.Config) { c.Registry = conn.NewRegistry() })
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Close(context.Background()); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(shared)
	if want := []string{"a limit 7 own registry true", "b limit 7 own registry true"}; !slices.Equal(shared, want) {
		t.Errorf("Start saw %q, want %q", shared, want)
	}
	if want := []string{"b limit 0 own registry false"}; !slices.Equal(instances, want) {
		t.Errorf("StartInstance saw %q, want %q", instances, want)
	}
}
