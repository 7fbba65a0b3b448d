package e2e_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFailuresNoWaitCanFix: a missing command, a program that is not
// executable and a missing working directory stop in failed-permanent
// after one confirming retry, with the default policy, well within 2 s of
// wall time instead of its 151.5 s of backoff, naming the fix.
func TestFailuresNoWaitCanFix(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := newEnv(t).bin
	tests := []struct {
		name string
		cmd  *conn.Stdio
		fix  string
	}{
		{"command not in PATH", conn.Command("mcpfsm-e2e-no-such-server"), conn.FixCommand},
		{"command path missing", conn.Command(filepath.Join(dir, "no-such-server")), conn.FixCommand},
		{"not executable", conn.Command(notExec), conn.FixExecutable},
		{"working directory missing", &conn.Stdio{Path: bin, Dir: filepath.Join(dir, "no-such-dir")}, conn.FixWorkDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			p := policy.Default()
			began := time.Now()
			e.start(conn.Config{Transport: tt.cmd, Reconnect: &p})
			tr := e.rec.Await(t, wait, conn.FailedPermanent)
			took := time.Since(began)
			t.Logf("failed-permanent after %v: %v", took, tr.Err)
			if took >= 2*time.Second {
				t.Errorf("failed-permanent after %v, want under 2s", took)
			}
			var pe *conn.PermanentError
			if !errors.As(tr.Err, &pe) || pe.Fix != tt.fix || !errors.Is(tr.Err, conn.ErrPermanent) {
				t.Errorf("err = %v, want a *PermanentError with fix %q", tr.Err, tt.fix)
			}
			if n := e.rec.Count(conn.Connecting); n != 1 {
				t.Errorf("%d retries, want exactly 1 confirming retry; transitions:\n%s", n, e.rec.Dump())
			}
		})
	}
}

// TestReconnectAfterTheFix: an operator fixes what failed-permanent or
// exhausted reported, calls Reconnect, and the server is back at once.
func TestReconnectAfterTheFix(t *testing.T) {
	t.Run("working directory created", func(t *testing.T) {
		e := newEnv(t)
		dir := filepath.Join(t.TempDir(), "later")
		cmd := e.command()
		cmd.Dir = dir
		sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(10)})
		e.rec.Await(t, wait, conn.FailedPermanent)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := sup.Reconnect(ctx); err != nil {
			t.Fatalf("Reconnect = %v, want nil", err)
		}
		e.mustEcho("back")
	})
	t.Run("exhausted, then the server fixed", func(t *testing.T) {
		e := newEnv(t)
		var fixed atomic.Bool
		bad, good := e.command("-exit-at-start"), e.command()
		sup := e.start(conn.Config{Reconnect: fast(2), Transport: conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
			if fixed.Load() {
				return good.Open(ctx)
			}
			return bad.Open(ctx)
		})})
		e.rec.Await(t, wait, conn.Exhausted)
		fixed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := sup.Reconnect(ctx); err != nil {
			t.Fatalf("Reconnect = %v, want nil", err)
		}
		if got := sup.State(); got != conn.Established {
			t.Errorf("state after Reconnect = %s", got)
		}
		e.mustEcho("back")
	})
}
