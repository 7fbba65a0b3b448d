package e2e_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// matrixKeepAlive is the liveness interval of the matrix: a hung server
// must be lost within two of them, plus the stdio close barrier (two
// grace periods of matrixGrace, then SIGKILL) that runs before the loss is
// reported.
const (
	matrixKeepAlive = 150 * time.Millisecond
	matrixGrace     = 20 * time.Millisecond
)

// matrixServer is one server of the matrix: how to supervise it, the
// protocol it must negotiate, and how to find the PID of its newest
// process.
type matrixServer struct {
	name     string
	protocol string // the version the supervisor must negotiate
	setup    func(t *testing.T, e *env) (conn.Config, func() int)
}

func matrixServers() []matrixServer {
	fixture := func(version string) func(*testing.T, *env) (conn.Config, func() int) {
		return func(t *testing.T, e *env) (conn.Config, func() int) {
			cmd := e.command()
			cmd.TerminateDuration = matrixGrace
			newest := func() int {
				pids := e.pids()
				if len(pids) == 0 {
					t.Fatal("no fixture process logged its PID")
				}
				return pids[len(pids)-1]
			}
			return conn.Config{Transport: cmd, ProtocolVersion: version}, newest
		}
	}
	return []matrixServer{
		{"go-classic", conn.ClassicProtocolVersion, fixture(conn.ClassicProtocolVersion)},
		{"go-2026", conn.DefaultProtocolVersion, fixture("")},
		{"npm-everything", conn.ClassicProtocolVersion, func(t *testing.T, e *env) (conn.Config, func() int) {
			entry := everythingServer(t)
			pidfile := filepath.Join(e.dir, "node.pid")
			cmd := conn.Command("sh", "-c", fmt.Sprintf("echo $$ > %q; exec node %q stdio", pidfile, entry))
			cmd.TerminateDuration = matrixGrace
			return conn.Config{Name: "everything", Transport: cmd}, func() int { return readPIDFile(t, pidfile) }
		}},
	}
}

// TestStdioMatrix: every stdio server of the matrix, on the protocol it
// negotiates by default (or pinned classic), recovers from SIGKILL and
// from a SIGSTOP hang: the hang is lost within two liveness intervals
// (plus the close barrier), the tools after recovery are identical, and
// the stopped or killed process is gone before the next one answers.
func TestStdioMatrix(t *testing.T) {
	for _, srv := range matrixServers() {
		for _, f := range []struct {
			name string
			sig  syscall.Signal
		}{{"SIGKILL", syscall.SIGKILL}, {"SIGSTOP", syscall.SIGSTOP}} {
			fault := f.sig
			// Not parallel: every test checks that no fixture process
			// outlives it.
			t.Run(srv.name+"/"+f.name, func(t *testing.T) {
				e := newEnv(t)
				cfg, newest := srv.setup(t, e)
				cfg.Reconnect, cfg.KeepAlive = fast(3), matrixKeepAlive
				sup := e.start(cfg)
				e.rec.Await(t, wait, conn.Established)
				st := sup.Status()
				if st.Protocol != srv.protocol {
					t.Errorf("negotiated %q, want %q", st.Protocol, srv.protocol)
				}
				before := st.Tools
				pid := newest()
				if err := syscall.Kill(pid, fault); err != nil {
					t.Fatalf("signal %v to %d: %v", fault, pid, err)
				}
				hit := time.Now()
				lost := e.rec.Await(t, wait, conn.LostReconnecting)
				took := time.Since(hit)
				t.Logf("%v: lost after %v: %v", fault, took, lost.Err)
				// Detection within two intervals; the loss is reported after
				// the close barrier (two grace periods, then SIGKILL), and a
				// loaded machine schedules late.
				if limit := 2*matrixKeepAlive + 2*matrixGrace + slack; took > limit {
					t.Errorf("loss reported %v after %v, want within %v (2 x KeepAlive + the close barrier + scheduling)", took, fault, limit)
				}
				e.rec.Await(t, wait, conn.Connecting)
				e.rec.Await(t, wait, conn.Established)
				if alive(pid) {
					t.Errorf("process %d alive after the reconnect", pid)
				}
				if after := sup.Status().Tools; !slices.Equal(after, before) {
					t.Errorf("tools after recovery:\n%v\nwant\n%v", after, before)
				}
				if sup.Status().Protocol != srv.protocol {
					t.Errorf("renegotiated %q, want %q", sup.Status().Protocol, srv.protocol)
				}
				if n := e.rec.Count(conn.LostReconnecting); n != 1 {
					t.Errorf("%d losses, want 1:\n%s", n, e.rec.Dump())
				}
			})
		}
	}
}
