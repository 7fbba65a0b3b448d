//go:build linux

package sandbox_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The attacks of issue 46 again, with mcpfsm running as an ordinary
// user: the helper "sandboxed" plays mcpfsm as nobody (uid 65534) when
// the test runs as root, and as the test's own user otherwise (which is
// then an ordinary user already).

// nobody is the uid and gid the tests become, when they run as root.
const nobody = 65534

// asUser returns a command that runs the test binary as an ordinary user
// with the helper action: a copy of the binary, in a directory that user
// can reach, when the test runs as root.
func asUser(t *testing.T, action string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var sys *syscall.SysProcAttr
	if os.Geteuid() == 0 {
		dir := reachable(t)
		data, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(dir, "helper")
		if err := os.WriteFile(exe, data, 0o755); err != nil {
			t.Fatal(err)
		}
		sys = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	c := exec.Command(exe)
	c.Dir = "/"
	c.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
	c.SysProcAttr = sys
	return c
}

// reachable is a temporary directory that every user can enter.
func reachable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runAsUser(t *testing.T, c *exec.Cmd) (string, error) {
	t.Helper()
	out, err := c.CombinedOutput()
	if strings.Contains(string(out), "sandbox unavailable") {
		t.Fatalf("no sandbox as an ordinary user: %s", out)
	}
	if want := fmt.Sprintf("host uid %d\n", nobody); os.Geteuid() == 0 && !strings.HasPrefix(string(out), want) {
		t.Fatalf("the host did not run as nobody: %q", out)
	}
	return string(out), err
}

func TestAttackSocketFamilyHighBitsAsUser(t *testing.T) {
	path := filepath.Join(reachable(t), "victim.sock")
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 8); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777) // anyone may connect, but for the sandbox
	got, err := runAsUser(t, asUser(t, "sandboxed:socket64:"+path))
	if err == nil || !strings.Contains(got, "socket: operation not permitted") {
		t.Errorf("socket(1|1<<32) and connect to %s: %q, %v; want socket refused", path, got, err)
	}
	if c, _, err := unix.Accept(ln); err == nil {
		unix.Close(c)
		t.Errorf("the host's socket accepted a connection from the sandbox")
	}
}

func TestAttackIOUringAsUser(t *testing.T) {
	got, err := runAsUser(t, asUser(t, "sandboxed:iouring"))
	if err == nil || !strings.Contains(got, "io_uring_setup: operation not permitted") {
		t.Errorf("io_uring_setup: %q, %v; want operation not permitted", got, err)
	}
}

func TestAttackInheritedDescriptorsAsUser(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("hush"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	// As a shell's 7<secret in mcpfsm (the control socket takes 3).
	c := asUser(t, "sandboxed:fd:7")
	c.ExtraFiles = []*os.File{null, null, null, null, f}
	got, err := runAsUser(t, c)
	if err == nil || strings.Contains(got, "hush") || !strings.Contains(got, "bad file descriptor") {
		t.Errorf("read mcpfsm's descriptor 7: %q, %v; want bad file descriptor", got, err)
	}
}

func TestAttackSetsidOutlivesAsUser(t *testing.T) {
	got, err := runAsUser(t, asUser(t, "sandboxed:setsid"))
	if err != nil || !strings.Contains(got, "started") {
		t.Errorf("a setsid child of the server: %q, %v; want it ended with the server", got, err)
	}
}

func TestAttackOutlivesHostAsUser(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	host := asUser(t, "host")
	host.Stdout = w
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ready := make([]byte, 6)
	r.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(r, ready); err != nil || string(ready) != "ready\n" {
		host.Process.Kill()
		host.Wait()
		t.Fatalf("the host did not start its server: %q, %v", ready, err)
	}
	host.Process.Kill()
	host.Wait()
	if err := waitEOF(r, 10*time.Second); err != nil {
		t.Errorf("the server still runs 10s after its host was killed: %v", err)
	}
}
