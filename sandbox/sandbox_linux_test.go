//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/sandbox"
)

// run runs the helper with action inside spec and returns its output and
// how it ended.
func run(t *testing.T, spec sandbox.Spec, action string) (string, error) {
	t.Helper()
	return runLogged(t, spec, action, io.Discard)
}

// runLogged is run with the sandbox's log written to logs.
func runLogged(t *testing.T, spec sandbox.Spec, action string, logs io.Writer) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	r, err := spec.Prepare(cmd, sandbox.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	err = cmd.Wait()
	return out.String(), err
}

func TestReadAllowedAndDenied(t *testing.T) {
	dir := t.TempDir()
	ok, secret := dir+"/ok", dir+"/secret"
	os.WriteFile(ok, []byte("fine"), 0o644)
	os.WriteFile(secret, []byte("hush"), 0o644)
	spec := sandbox.Spec{DenyRead: []string{secret}}
	if out, err := run(t, spec, "read:"+ok); err != nil || out != "fine" {
		t.Errorf("read %s: %q, %v", ok, out, err)
	}
	out, err := run(t, spec, "read:"+secret)
	if err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("read %s: %q, %v; want permission denied", secret, out, err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "hush" {
		t.Errorf("the host cannot read %s: %q, %v", secret, b, err)
	}
}

func TestAllowReadLimitsReads(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	os.WriteFile(in+"/a", []byte("inside"), 0o644)
	os.WriteFile(out+"/b", []byte("outside"), 0o644)
	spec := sandbox.Spec{AllowRead: []string{in}}
	if got, err := run(t, spec, "read:"+in+"/a"); err != nil || got != "inside" {
		t.Errorf("read inside allowRead: %q, %v", got, err)
	}
	if got, err := run(t, spec, "read:"+out+"/b"); err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("read outside allowRead: %q, %v; want permission denied", got, err)
	}
	// Within an allowed tree, a denyRead still wins.
	os.WriteFile(in+"/key", []byte("k"), 0o644)
	spec.DenyRead = []string{in + "/key"}
	if got, err := run(t, spec, "read:"+in+"/key"); err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("read denyRead inside allowRead: %q, %v; want permission denied", got, err)
	}
	if got, err := run(t, spec, "read:"+in+"/a"); err != nil || got != "inside" {
		t.Errorf("read beside a denyRead: %q, %v", got, err)
	}
}

func TestWrites(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	spec := sandbox.Spec{AllowWrite: []string{dir}}
	if got, err := run(t, spec, "write:"+dir+"/new"); err != nil {
		t.Errorf("write inside allowWrite: %q, %v", got, err)
	}
	if b, _ := os.ReadFile(dir + "/new"); string(b) != "written" {
		t.Errorf("the file written inside holds %q", b)
	}
	// With a denyWrite inside, the directory is split: its other entries
	// stay writable, the denied one is not, and (Landlock grants a
	// directory's rights to all beneath it) nothing is created directly
	// in the directory that holds it.
	os.Mkdir(dir+"/ro", 0o755)
	os.Mkdir(dir+"/rw", 0o755)
	spec.DenyWrite = []string{dir + "/ro"}
	for _, p := range []string{dir + "/rw/x", dir + "/new"} {
		if got, err := run(t, spec, "write:"+p); err != nil {
			t.Errorf("write %s beside a denyWrite: %q, %v", p, got, err)
		}
	}
	for _, p := range []string{dir + "/ro/x", other + "/x", dir + "/created"} {
		// Outside allowWrite the mount is read-only (issue 46): that
		// refuses first.
		if got, err := run(t, spec, "write:"+p); err == nil || !strings.Contains(got, "permission denied") && !strings.Contains(got, "read-only file system") {
			t.Errorf("write %s: %q, %v; want permission denied or read-only file system", p, got, err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// No allowWrite: nothing is writable but the null devices.
	if got, err := run(t, sandbox.Spec{}, "write:"+dir+"/again"); err == nil {
		t.Errorf("write with no allowWrite: %q, %v; want permission denied", got, err)
	}
	if got, err := run(t, sandbox.Spec{}, "write:/dev/null"); err != nil {
		t.Errorf("write /dev/null: %q, %v", got, err)
	}
}

func TestChildrenInherit(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/secret", []byte("hush"), 0o644)
	spec := sandbox.Spec{DenyRead: []string{dir}}
	got, err := run(t, spec, "child:read:"+dir+"/secret")
	if err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("a child read a denied file: %q, %v", got, err)
	}
}

func TestNoNetworkWithoutAllowedDomains(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got, err := run(t, sandbox.Spec{}, "dial:"+ln.Addr().String())
	if err == nil || !strings.Contains(got, "connection refused") {
		t.Errorf("dial the host's %s from the sandbox: %q, %v; want connection refused", ln.Addr(), got, err)
	}
	if got, _ := run(t, sandbox.Spec{}, "env"); strings.Contains(got, "HTTP_PROXY=") {
		t.Errorf("a sandbox without allowedDomains got a proxy:\n%s", got)
	}
}

func TestProxyAllowsByName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	var logs bytes.Buffer
	spec := sandbox.Spec{AllowedDomains: []string{"localhost"}}
	got, err := runLogged(t, spec, fmt.Sprintf("fetch:http://localhost:%d/", port), &logs)
	if err != nil || got != "hello from the host" {
		t.Errorf("fetch localhost through the proxy: %q, %v", got, err)
	}
	got, err = runLogged(t, spec, fmt.Sprintf("fetch:http://127.0.0.1:%d/", port), &logs)
	if err == nil || !strings.Contains(got, "refused") {
		t.Errorf("fetch 127.0.0.1 through the proxy: %q, %v; want refused", got, err)
	}
	want := fmt.Sprintf("the sandbox refused a connection to 127.0.0.1:%d", port)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, logs.String())
	}
	if strings.Contains(logs.String(), "localhost") {
		t.Errorf("the log names the allowed host:\n%s", logs.String())
	}
}

func TestMemoryLimit(t *testing.T) {
	exe, _ := os.Executable()
	// 512: a test binary built with -race needs that much to start.
	spec := sandbox.Spec{MemoryMB: 512}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER=alloc:16")
	out, st := runCmd(t, spec, cmd)
	if !st.Success() || !strings.Contains(out, "allocated 16 MiB") {
		t.Fatalf("16 MiB under memoryMB 512: %s, %q", st, out)
	}
	cmd = exec.Command(exe)
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER=alloc:2048")
	var limit string
	out, st = runCmdLimit(t, spec, cmd, &limit)
	if st.Success() {
		t.Fatalf("2 GiB under memoryMB 512 succeeded: %q", out)
	}
	if want := "out of memory under the sandbox's memoryMB 512"; limit != want {
		t.Errorf("Limit = %q, want %q (exit %s, output %.200q)", limit, want, st, out)
	}
}

func TestFileLimit(t *testing.T) {
	got, err := run(t, sandbox.Spec{MaxFiles: 32}, "files:100")
	if err == nil || !strings.Contains(got, "too many open files") {
		t.Errorf("100 files under maxFiles 32: %q, %v", got, err)
	}
	if got, err := run(t, sandbox.Spec{MaxFiles: 256}, "files:100"); err != nil {
		t.Errorf("100 files under maxFiles 256: %q, %v", got, err)
	}
}

func TestMaxProcs(t *testing.T) {
	spec := sandbox.Spec{MaxProcs: 40}
	exe, _ := os.Executable()
	if os.Geteuid() == 0 && spec.Check() != nil {
		// The kernel exempts root from RLIMIT_NPROC: without a pids
		// cgroup, refused, not ignored.
		_, err := spec.Prepare(exec.Command(exe), sandbox.Options{})
		var ue *sandbox.UnavailableError
		if !errors.As(err, &ue) || ue.Feature != "limits.maxProcs" || !strings.Contains(ue.Fix, "ordinary user") {
			t.Fatalf("Prepare with maxProcs as root: %v; want an UnavailableError naming limits.maxProcs", err)
		}
		if err := spec.Check(); !errors.As(err, &ue) {
			t.Errorf("Check with maxProcs as root: %v", err)
		}
		return
	}
	got, err := run(t, spec, "procs:100")
	if err == nil || !strings.Contains(got, "resource temporarily unavailable") {
		t.Errorf("100 processes under maxProcs 40: %q, %v", got, err)
	}
}

func TestNoCapabilitiesAndNoSignalsOut(t *testing.T) {
	got, err := run(t, sandbox.Spec{}, "status")
	if err != nil {
		t.Fatalf("status: %q, %v", got, err)
	}
	for _, field := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if !strings.Contains(got, field+":\t0000000000000000") {
			t.Errorf("the program holds capabilities (%s):\n%s", field, got)
		}
	}
	if !strings.Contains(got, "NoNewPrivs:\t1") {
		t.Errorf("no_new_privs is not set:\n%s", got)
	}
	if got, err := run(t, sandbox.Spec{}, fmt.Sprintf("kill:%d", os.Getpid())); err == nil {
		t.Errorf("the program could signal its host: %q", got)
	}
}

func TestExecFailureIsTheCommandsError(t *testing.T) {
	missing := t.TempDir() + "/no-such-program"
	r, err := (&sandbox.Spec{}).Prepare(exec.Command(missing), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.Start(context.Background())
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "fork/exec" || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Start of a missing program: %v; want the fork/exec *fs.PathError of os/exec", err)
	}
}

func TestCheck(t *testing.T) {
	if err := (&sandbox.Spec{AllowedDomains: []string{"example.com"}}).Check(); err != nil {
		t.Fatalf("Check on this machine: %v", err)
	}
	if err := (&sandbox.Spec{AllowWrite: []string{"relative"}}).Check(); err == nil || !strings.Contains(err.Error(), "AllowWrite[0]") {
		t.Errorf("Check of a relative path: %v", err)
	}
}

// runCmd runs cmd inside spec and returns its output and how it ended.
func runCmd(t *testing.T, spec sandbox.Spec, cmd *exec.Cmd) (string, *os.ProcessState) {
	t.Helper()
	return runCmdLimit(t, spec, cmd, new(string))
}

func runCmdLimit(t *testing.T, spec sandbox.Spec, cmd *exec.Cmd, limit *string) (string, *os.ProcessState) {
	t.Helper()
	r, err := spec.Prepare(cmd, sandbox.Options{})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer r.Close()
	var out bytes.Buffer
	w := io.Writer(&out)
	if watch := r.StderrWatch(); watch != nil {
		w = io.MultiWriter(&out, watch)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	_ = cmd.Wait()
	*limit = r.Limit(cmd.ProcessState)
	return out.String(), cmd.ProcessState
}

func TestNoUnixSocketsUnlessAllowed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if got, err := run(t, sandbox.Spec{}, "unix:"+path); err == nil || !strings.Contains(got, "operation not permitted") {
		t.Errorf("connect to the host's %s: %q, %v; want operation not permitted", path, got, err)
	}
	if got, err := run(t, sandbox.Spec{}, "child:unix:"+path); err == nil || !strings.Contains(got, "operation not permitted") {
		t.Errorf("a child connects to the host's %s: %q, %v; want operation not permitted", path, got, err)
	}
	if got, err := run(t, sandbox.Spec{}, "socketpair"); err != nil {
		t.Errorf("socketpair: %q, %v", got, err)
	}
	if got, err := run(t, sandbox.Spec{AllowAllUnixSockets: true}, "unix:"+path); err != nil {
		t.Errorf("connect with allowAllUnixSockets: %q, %v", got, err)
	}
}
