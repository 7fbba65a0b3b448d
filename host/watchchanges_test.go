package host

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// With WatchOptions.Changes, a watcher reloads on the changes sent on it
// as on fsnotify's, through the same debounce and digest, and runs under
// testing/synctest (fsnotify's blocking read would keep simulated time
// from moving): a change of the file reloads it once the debounce
// passed, a change that left the content as it was reloads nothing, and
// a closed channel ends Run.
func TestWatchChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	server := func(name string) obj {
		return obj{"command": "sim-" + name, "reconnect": obj{"initialDelayMs": 1000, "maxAttempts": 2, "jitter": 0}}
	}
	writeFile(t, path, obj{"mcpServers": obj{"a": server("a")}})
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var servers []*conntest.Server
		start := func(ctx context.Context, c conn.Config) (*conn.Supervisor, error) {
			srv := conntest.NewServer(conntest.Accept)
			mu.Lock()
			servers = append(servers, srv)
			mu.Unlock()
			c.Transport = srv.Transport()
			return conn.Start(ctx, c)
		}
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			for _, s := range servers {
				s.Close()
			}
		}()
		cfg, err := config.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := New(Options{Path: path, Start: start})
		if err := h.Start(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := h.Close(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		changes := make(chan struct{})
		var reloads []error
		w, err := h.Watch(WatchOptions{Changes: changes, Reloaded: func(err error) {
			mu.Lock()
			reloads = append(reloads, err)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		watched := make(chan error, 1)
		go func() { watched <- w.Run(ctx) }()
		reloaded := func() int {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			for _, err := range reloads {
				if err != nil {
					t.Fatalf("reload: %v", err)
				}
			}
			return len(reloads)
		}

		changes <- struct{}{} // the same content
		time.Sleep(DefaultDebounce)
		if n := reloaded(); n != 0 {
			t.Fatalf("%d reloads of an unchanged file, want 0", n)
		}

		writeFile(t, path, obj{"mcpServers": obj{"a": server("a"), "b": server("b")}})
		changes <- struct{}{}
		time.Sleep(DefaultDebounce / 2)
		changes <- struct{}{} // a second write of the same save
		time.Sleep(DefaultDebounce - time.Nanosecond)
		if n := reloaded(); n != 0 {
			t.Fatalf("%d reloads before the debounce passed, want 0", n)
		}
		time.Sleep(time.Nanosecond)
		if n := reloaded(); n != 1 {
			t.Fatalf("%d reloads once the debounce passed, want 1", n)
		}
		if n := len(h.Status()); n != 2 {
			t.Fatalf("%d servers after the reload, want 2", n)
		}

		close(changes)
		synctest.Wait()
		select {
		case err := <-watched:
			if err != nil {
				t.Fatalf("Run returned %v once its changes ended, want nil", err)
			}
		default:
			t.Fatal("Run goes on after its changes ended")
		}
	})
}
