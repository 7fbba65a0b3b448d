//go:build linux

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSandboxedServer runs the fixture server in a sandbox and has its
// tools try what the sandbox refuses, in the server and in a child of it:
// reads outside allowRead and inside denyRead, writes outside allowWrite,
// a raw TCP dial, a fetch of a name not allowed; and what it allows: the
// same through the proxy by an allowed name. Then an allocation over
// memoryMB ends the server, and the cause says so. The host can still
// read what the server could not.
func TestSandboxedServer(t *testing.T) {
	e := newEnv(t)
	in, out := t.TempDir(), t.TempDir()
	for path, body := range map[string]string{in + "/a": "inside", in + "/key": "secret key", out + "/b": "outside"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(in+"/w", 0o755)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host") }))
	defer web.Close()
	port := web.Listener.Addr().(*net.TCPAddr).Port
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	cmd := e.command("-probes")
	cmd.Launcher = &sandbox.Spec{AllowRead: []string{in}, DenyRead: []string{in + "/key"}, AllowWrite: []string{in + "/w", e.dir}, // e.dir: the pidlog
		AllowedDomains: []string{"localhost"}, MemoryMB: 256}
	sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(3), Logger: e.rec.Logger()})
	e.rec.Await(t, wait, conn.Established)

	type step struct {
		tool, arg string
		want      string // in the answer; "ok: " answers succeeded
	}
	local := fmt.Sprintf("http://localhost:%d/", port)
	numeric := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for _, s := range []step{
		{"read", in + "/a", "ok: inside"},
		{"read", out + "/b", "permission denied"},
		{"read", in + "/key", "permission denied"},
		{"write", in + "/w/new", "ok: wrote"},
		// Outside allowWrite every mount is read-only (issue 46).
		{"write", in + "/new", "read-only file system"},
		{"write", out + "/new", "read-only file system"},
		{"dial", ln.Addr().String(), "connection refused"},
		{"fetch", local, "ok: hello from the host"},
		{"fetch", numeric, "403 Forbidden: mcpfsm sandbox proxy: the sandbox refused a connection to 127.0.0.1"},
		{"alloc", "16", "ok: allocated 16 MiB"},
	} {
		for _, args := range []map[string]any{{"arg": s.arg}, {"arg": s.arg, "probe": s.tool}} {
			tool := s.tool
			if args["probe"] != nil {
				tool = "child"
			}
			got, err := e.call(tool, args)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, s.want) || strings.HasPrefix(s.want, "ok: ") != (err == nil) {
				t.Errorf("%s %s %s: %q, want %q", tool, s.tool, s.arg, got, s.want)
			}
		}
	}
	if b, err := os.ReadFile(out + "/b"); err != nil || string(b) != "outside" {
		t.Errorf("the host cannot read %s: %q, %v", out+"/b", b, err)
	}
	if _, err := os.Stat(out + "/new"); err == nil {
		t.Errorf("%s was written", out+"/new")
	}
	refusal := fmt.Sprintf("the sandbox refused a connection to 127.0.0.1:%d", port)
	e.rec.WaitLog(t, wait, slog.LevelWarn, refusal)
	for _, r := range e.rec.Records(slog.LevelWarn) {
		if strings.HasPrefix(r.Msg, refusal) && r.Attrs["server"] != "fx" {
			t.Errorf("the refusal's record does not name the server: %+v", r)
		}
	}

	if _, err := e.call("alloc", map[string]any{"arg": "1024"}); err == nil {
		t.Fatal("1 GiB under memoryMB 256 succeeded")
	}
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	want := "out of memory under the sandbox's memoryMB 256"
	var exit *conn.ServerExit
	if !errors.As(lost.Err, &exit) || exit.Limit != want || !strings.Contains(lost.Err.Error(), "the server exited: "+want) {
		t.Errorf("the loss's cause: %v; want %q", lost.Err, want)
	}
	if err := sup.Status().LastErr; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("status LastErr: %v", err)
	}
	e.rec.Await(t, wait, conn.Established) // the next process is sandboxed too
	if got, err := e.call("read", map[string]any{"arg": out + "/b"}); err == nil {
		t.Errorf("after the restart, read outside allowRead: %q", got)
	}
}

// TestSandboxMaxProcs: a sandbox the system cannot give
// fails the attempt with a permanent error that names what is missing and
// the fix, and the server is never started unsandboxed. (maxProcs under
// root without a pids cgroup: the kernel does not apply RLIMIT_NPROC to
// root.) As an ordinary user, or as root with a pids cgroup, maxProcs
// applies and bounds the server's processes.
func TestSandboxMaxProcs(t *testing.T) {
	e := newEnv(t)
	cmd := e.command("-probes")
	spec := &sandbox.Spec{MaxProcs: 40, AllowWrite: []string{e.dir}}
	cmd.Launcher = spec
	if os.Geteuid() != 0 || spec.Check() == nil {
		e.start(conn.Config{Transport: cmd, Reconnect: fast(3)})
		e.rec.Await(t, wait, conn.Established)
		got, err := e.call("procs", map[string]any{"arg": "100"})
		if err == nil || !strings.Contains(err.Error(), "resource temporarily unavailable") {
			t.Errorf("100 processes under maxProcs 40: %q, %v", got, err)
		}
		return
	}
	sup := e.start(conn.Config{Transport: cmd, Reconnect: fast(3)})
	tr := e.rec.Await(t, wait, conn.FailedPermanent)
	var pe *conn.PermanentError
	if !errors.Is(tr.Err, conn.ErrPermanent) || !errors.As(tr.Err, &pe) || !strings.Contains(pe.Fix, "run mcpfsm as an ordinary user") ||
		!strings.Contains(tr.Err.Error(), "sandbox unavailable: limits.maxProcs") {
		t.Errorf("the failure: %v; want a PermanentError naming limits.maxProcs and its fix", tr.Err)
	}
	if n := len(e.pids()); n != 0 {
		t.Errorf("%d server processes started", n)
	}
	if st := sup.Status(); st.State != conn.FailedPermanent {
		t.Errorf("state %s", st.State)
	}
}

// TestSandboxMaxProcsAsUser runs mcpfsm itself as an ordinary user (nobody,
// when the test runs as root) with a server under maxProcs: the server's
// 100 children are refused past the limit.
func TestSandboxMaxProcsAsUser(t *testing.T) {
	host := fixture.BuildHost(t)
	bin := fixture.Build(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	body := fmt.Sprintf(`{"servers": {"fx": {"command": %q, "args": ["-probes"], "sandboxEnabled": true, "sandbox": {"limits": {"maxProcs": 40}}}}}`, bin)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(host, "call", "-config", cfg, "mcp__fx__procs", `{"arg": "100"}`)
	if os.Geteuid() == 0 {
		for _, d := range []string{filepath.Dir(host), filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		c.Dir = "/"
	}
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "resource temporarily unavailable") || !strings.Contains(string(out), "started ") {
		t.Errorf("mcpfsm call procs 100 under maxProcs 40: %v\n%s", err, out)
	}
}

// TestVSCodeSandboxedServe serves a VS Code mcp.json as written, with
// "sandboxEnabled" on one server and a top-level "sandbox", through
// 'mcpfsm serve' over stdio; -sandbox-all confines the other server too,
// from the same top-level block. A client's calls show both confined.
func TestVSCodeSandboxedServe(t *testing.T) {
	bin := fixture.Build(t)
	ws := t.TempDir()
	secret := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(ws, "readme"), []byte("workspace file"), 0o644)
	os.WriteFile(filepath.Join(secret, "key"), []byte("secret"), 0o644)
	t.Setenv("MCPFSM_TEST_SECRET_DIR", secret) // serve inherits it
	cfg := filepath.Join(ws, ".vscode", "mcp.json")
	body := fmt.Sprintf(`{
	// VS Code's mcp.json, with sandbox-runtime's schema.
	"sandbox": {
		"filesystem": {"denyRead": ["${env:MCPFSM_TEST_SECRET_DIR}"], "allowWrite": ["${workspaceFolder}/out"]},
		"network": {"allowedDomains": ["localhost"]}
	},
	"servers": {
		"boxed": {"type": "stdio", "command": %q, "args": ["-probes"], "sandboxEnabled": true},
		"other": {"type": "stdio", "command": %q, "args": ["-probes"]}
	}
}`, bin, bin)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// Built before the deadline starts: a build of cmd/mcpfsm inside it
	// left serve no time to answer (the test's flake).
	host := fixture.BuildHost(t)
	for _, all := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		args := []string{"serve", "-config", cfg}
		if all {
			args = append(args, "-sandbox-all")
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v1"}, nil)
		cmd := exec.Command(host, args...)
		cmd.Stderr = serveOutput(t, fmt.Sprint(args))
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to serve %v: %v", args, err)
		}
		read := func(server, path string) (string, bool) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__" + server + "__read", Arguments: map[string]any{"arg": path}})
			if err != nil {
				t.Fatalf("call %s read: %v", server, err)
			}
			return contentText(res), !res.IsError
		}
		if got, ok := read("boxed", filepath.Join(ws, "readme")); !ok || got != "ok: workspace file" {
			t.Errorf("boxed reads the workspace: %q", got)
		}
		if got, ok := read("boxed", filepath.Join(secret, "key")); ok || !strings.Contains(got, "permission denied") {
			t.Errorf("boxed reads denyRead: %q", got)
		}
		got, ok := read("other", filepath.Join(secret, "key"))
		if all && (ok || !strings.Contains(got, "permission denied")) {
			t.Errorf("with -sandbox-all, other reads denyRead: %q", got)
		}
		if !all && (!ok || got != "ok: secret") {
			t.Errorf("without -sandbox-all, other is confined: %q", got)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}
