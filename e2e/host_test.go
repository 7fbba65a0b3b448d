package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// TestCloseWhoseContextEndsKillsAtOnce: a server that ignores stdin EOF,
// SIGINT, SIGTERM and SIGHUP, with grace periods of 10 s: a Close whose
// context ends after 200 ms (a host's second interrupt) kills the process
// group before it returns.
func TestCloseWhoseContextEndsKillsAtOnce(t *testing.T) {
	e := newEnv(t)
	cmd := e.command("-ignore-signals", "-ignore-eof")
	cmd.TerminateDuration = 10 * time.Second
	sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(3), CloseTimeout: 30 * time.Second})
	e.rec.Await(t, wait, conn.Established)
	pid := e.starts.await(t, wait)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := sup.Close(ctx)
	took := time.Since(start)
	t.Logf("Close: %v after %v", err, took)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the context's error", err)
	}
	if took > 2*time.Second {
		t.Errorf("Close took %v", took)
	}
	if alive(pid) {
		t.Errorf("server %d alive after Close gave up", pid)
	}
}

// host is one `mcpfsm run` process.
type host struct {
	cmd      *exec.Cmd
	stopping chan struct{} // gets a value when it logs "shutting down"
	done     chan struct{} // closed when it exited
	err      error         // its Wait error, once done
}

// startHost runs `mcpfsm run` with one stdio server, the fixture with
// flags, and waits until it printed the server's tools.
func startHost(t *testing.T, e *env, closeTimeoutMs int, flags ...string) *host {
	t.Helper()
	server := map[string]any{"command": e.bin, "args": append([]string{"-pidlog", e.pidlog}, flags...)}
	if closeTimeoutMs > 0 {
		server["closeTimeoutMs"] = closeTimeoutMs
	}
	data, err := json.Marshal(map[string]any{"servers": map[string]any{"fx": server}})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(e.dir, "mcpfsm.json")
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := &host{cmd: exec.Command(fixture.BuildHost(t), "run", "-config", config),
		stopping: make(chan struct{}, 1), done: make(chan struct{})}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "shutting down") {
				select {
				case h.stopping <- struct{}{}:
				default:
				}
			}
		}
	}()
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tools := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "tools (") {
				select {
				case tools <- struct{}{}:
				default:
				}
			}
		}
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		<-h.done
	})
	select {
	case <-tools:
	case <-h.done:
		t.Fatalf("mcpfsm run exited early: %v", h.err)
	case <-time.After(wait):
		t.Fatalf("mcpfsm run printed no tools within %v", wait)
	}
	return h
}

// signal sends sig to the host.
func (h *host) signal(t *testing.T, sig syscall.Signal) { signal(t, h.cmd, sig) }

// awaitExit waits for the host to exit and returns its exit code.
func (h *host) awaitExit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-h.done:
		return h.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("mcpfsm run still running %v after the signal", d)
		return -1
	}
}

// TestHostLeavesNoServerBehind: `mcpfsm run` with a server that ignores
// stdin EOF, SIGINT, SIGTERM and SIGHUP. Whatever the signal and the
// timing, the host exits and the server is gone: the grace periods are
// shortened to fit closeTimeoutMs, and a second interrupt skips the grace
// periods but still kills. (SIGHUP reloads run's config.)
func TestHostLeavesNoServerBehind(t *testing.T) {
	flags := []string{"-ignore-signals", "-ignore-eof"}
	for _, tc := range []struct {
		name           string
		closeTimeoutMs int
		signals        []syscall.Signal
		wantCode       int
		within         time.Duration
	}{
		// The default schedule (2 s + 2 s) does not fit in 1 s.
		{"SIGTERM-short-closeTimeout", 1000, []syscall.Signal{syscall.SIGTERM}, 0, 3 * time.Second},
		// The second interrupt cuts the default 4 s schedule short; the
		// server's group is killed, so the stop is no failure (exit 0).
		{"second-SIGINT", 0, []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 0, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := startHost(t, e, tc.closeTimeoutMs, flags...)
			pids := e.pids()
			if len(pids) != 1 {
				t.Fatalf("server processes %v, want one", pids)
			}
			start := time.Now()
			for i, sig := range tc.signals {
				if i > 0 {
					// Signals of one kind that are pending together are
					// delivered once: wait until the first was handled.
					select {
					case <-h.stopping:
					case <-time.After(wait):
						t.Fatal("the host did not start shutting down")
					}
				}
				h.signal(t, sig)
			}
			code := h.awaitExit(t, wait)
			took := time.Since(start)
			t.Logf("exit code %d after %v", code, took)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if took > tc.within {
				t.Errorf("host exited after %v, want within %v", took, tc.within)
			}
			if alive(pids[0]) {
				t.Errorf("server %d outlived the host", pids[0])
			}
		})
	}
}
