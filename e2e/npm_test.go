package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

// everythingServer returns the entry point of the installed
// @modelcontextprotocol/server-everything, or skips; with
// MCPFSM_REQUIRE_NPM_SERVERS set (as in CI) it fails instead.
func everythingServer(t *testing.T) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("MCPFSM_REQUIRE_NPM_SERVERS") != "" {
		skip = func(format string, args ...any) {
			t.Helper()
			t.Fatalf(format+" (MCPFSM_REQUIRE_NPM_SERVERS is set)", args...)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip("node is not installed: skipping the third-party server test")
	}
	dir := os.Getenv("MCPFSM_NPM_SERVERS")
	if dir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			t.Fatalf("go env GOMOD: %v", err)
		}
		dir = filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), ".cache", "npm-servers")
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		skip("@modelcontextprotocol/server-everything is not installed in %s: run .ci/npm-servers.sh", dir)
	}
	return entry
}

// TestEverythingServerRecoversFromSIGKILL runs the reference TypeScript
// server over stdio with the default protocol negotiation, kills it and checks
// that the supervisor brings it back.
func TestEverythingServerRecoversFromSIGKILL(t *testing.T) {
	entry := everythingServer(t)
	e := newEnv(t)
	pidfile := filepath.Join(e.dir, "node.pid")
	// exec: the pidfile holds node's own PID.
	script := fmt.Sprintf("echo $$ > %q; exec node %q stdio", pidfile, entry)
	sup := e.start(conn.Config{Name: "everything", Transport: conn.Command("sh", "-c", script), Reconnect: fast(3)})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := sup.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	before := sup.Status().Tools
	t.Logf("protocol %s, %d tools: %v", sup.Status().Protocol, len(before), before)
	echo := conn.PublicToolName("everything", "echo")
	got, err := callText(ctx, e.reg, echo, map[string]any{"message": "hello"})
	if err != nil || !strings.Contains(got, "hello") {
		t.Fatalf("echo: %q, %v", got, err)
	}

	pid := readPIDFile(t, pidfile)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill node %d: %v", pid, err)
	}
	e.rec.Await(t, wait, conn.LostReconnecting)
	e.rec.Await(t, wait, conn.Established)
	if alive(pid) {
		t.Errorf("killed node %d still alive", pid)
	}
	got, err = callText(ctx, e.reg, echo, map[string]any{"message": "again"})
	if err != nil || !strings.Contains(got, "again") {
		t.Fatalf("echo after recovery: %q, %v", got, err)
	}
	if after := sup.Status().Tools; strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("tools changed across the restart:\n%v\n%v", before, after)
	}
}

// readPIDFile returns the PID a wrapper script wrote to path.
func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pidfile: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pidfile: %v", err)
	}
	return pid
}
