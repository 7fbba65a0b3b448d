package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// Watch follows an edit in place, a replacement by rename, and a broken
// file, each with the diff of Reload.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	logA := filepath.Join(dir, "a.pids")
	path := filepath.Join(dir, "servers.json")
	writeFile(t, path, obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA)}})
	h, _ := started(t, path)
	reloaded := make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	w, err := h.Watch(WatchOptions{Debounce: 50 * time.Millisecond, Reloaded: func(err error) { reloaded <- err }})
	if err != nil {
		t.Fatal(err)
	}
	go func() { watched <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-watched
	}()
	next := func(what string) error {
		t.Helper()
		select {
		case err := <-reloaded:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no reload within 10s", what)
			return nil
		}
	}
	names := func() []string {
		var out []string
		for _, s := range h.Status() {
			out = append(out, s.Config.Name)
		}
		return out
	}

	edit := obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA), "b": fixtureServer(t)}}
	writeFile(t, path, edit)
	if err := next("an edit in place"); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 2 {
		t.Fatalf("servers after the edit: %v, want a and b", got)
	}
	a := fixture.PIDs(t, logA)

	// An editor's save: a new file renamed over the old one.
	tmp := filepath.Join(dir, ".servers.json.swp")
	writeFile(t, tmp, obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA)}})
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := next("a replacement"); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("servers after the replacement: %v, want a", got)
	}
	if now := fixture.PIDs(t, logA); len(now) != len(a) || !fixture.Alive(now[0]) {
		t.Errorf("a's processes %v, want %v untouched", now, a)
	}

	// A broken file is reported and changes nothing.
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": 3}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := next("a broken file"); err == nil {
		t.Fatal("a broken file reloaded without an error")
	}
	if got := names(); len(got) != 1 || !fixture.Alive(fixture.PIDs(t, logA)[0]) {
		t.Errorf("after a broken file: servers %v, a alive %v", got, fixture.Alive(fixture.PIDs(t, logA)[0]))
	}
}

// A Kubernetes ConfigMap volume updates its files by swapping a symbolic
// link to a new directory; the file itself never gets an event.
func TestWatchFollowsAConfigMapUpdate(t *testing.T) {
	dir := t.TempDir()
	write := func(version string, cfg obj) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, version, "servers.json"), cfg)
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	write("..v1", obj{"mcpServers": obj{"a": fixtureServer(t)}})
	path := filepath.Join(dir, "servers.json")
	if err := os.Symlink(filepath.Join("..data", "servers.json"), path); err != nil {
		t.Fatal(err)
	}
	h, _ := started(t, path)
	reloaded := make(chan error, 16)
	w, err := h.Watch(WatchOptions{Debounce: 50 * time.Millisecond, Reloaded: func(err error) { reloaded <- err }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-watched
	}()
	write("..v2", obj{"mcpServers": obj{"a": fixtureServer(t), "b": fixtureServer(t)}})
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ConfigMap update was not reloaded within 10s")
	}
	if n := len(h.Status()); n != 2 {
		t.Fatalf("%d servers after the update, want 2", n)
	}
}
