//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/sandbox"
	"golang.org/x/sys/unix"
)

// The tests here run the helper as a hostile server inside the sandbox,
// one escape each (issue 46), and assert that the sandbox refused it.

// unixListener is a Unix socket of the host that counts its connections.
func unixListener(t *testing.T) (path string, accepted chan struct{}) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return path, accepted
}

func TestAttackSocketFamilyHighBits(t *testing.T) {
	path, accepted := unixListener(t)
	got, err := run(t, sandbox.Spec{}, "socket64:"+path)
	if err == nil || !strings.Contains(got, "socket: operation not permitted") {
		t.Errorf("socket(1|1<<32) and connect to %s: %q, %v; want socket refused", path, got, err)
	}
	if len(accepted) > 0 {
		t.Errorf("the host's socket accepted a connection from the sandbox")
	}
	// With allowAllUnixSockets the same call works: the helper can do it.
	if got, err := run(t, sandbox.Spec{AllowAllUnixSockets: true}, "socket64:"+path); err != nil {
		t.Errorf("socket(1|1<<32) with allowAllUnixSockets: %q, %v", got, err)
	}
}

func TestAttackIOUring(t *testing.T) {
	for _, spec := range []sandbox.Spec{{}, {AllowAllUnixSockets: true}} {
		got, err := run(t, spec, "iouring")
		if err == nil || !strings.Contains(got, "io_uring_setup: operation not permitted") {
			t.Errorf("io_uring_setup (allowAllUnixSockets %v): %q, %v; want operation not permitted", spec.AllowAllUnixSockets, got, err)
		}
	}
}

func TestAttackDatagramSocketpair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.sock")
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	got, err := run(t, sandbox.Spec{}, "dgram:"+path)
	if err == nil || !strings.Contains(got, "socketpair: operation not permitted") {
		t.Errorf("a datagram socketpair sending to %s: %q, %v; want socketpair refused", path, got, err)
	}
	buf := make([]byte, 64)
	if n, _, err := unix.Recvfrom(fd, buf, 0); err == nil {
		t.Errorf("the host's datagram socket received %q from the sandbox", buf[:n])
	}
	if got, err := run(t, sandbox.Spec{}, "seqpacket"); err != nil {
		t.Errorf("a seqpacket socketpair: %q, %v", got, err)
	}
}

func TestAttackInheritedDescriptors(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("hush"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As a shell's 7<secret: open without close-on-exec.
	fd, err := unix.Open(secret, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	got, err := run(t, sandbox.Spec{DenyRead: []string{secret}}, fmt.Sprintf("fd:%d", fd))
	if err == nil || strings.Contains(got, "hush") || !strings.Contains(got, "bad file descriptor") {
		t.Errorf("read the host's descriptor %d: %q, %v; want bad file descriptor", fd, got, err)
	}
}

func TestAttackKeyring(t *testing.T) {
	got, err := run(t, sandbox.Spec{}, "keyring")
	if err == nil || !strings.Contains(got, "operation not permitted") {
		t.Errorf("read the session keyring: %q, %v; want operation not permitted", got, err)
	}
}

func TestAttackSysVSharedMemory(t *testing.T) {
	key := 0x4d430000 | os.Getpid()&0xffff
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Skipf("no SysV shared memory on the host: %v", err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	got, err := run(t, sandbox.Spec{}, fmt.Sprintf("shm:%d", key))
	if err == nil || !strings.Contains(got, "no such file or directory") {
		t.Errorf("attach the host's shared memory %#x: %q, %v; want no such file or directory", key, got, err)
	}
}

func TestAttackOtherProcesses(t *testing.T) {
	victim := exec.Command("/bin/sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		victim.Process.Kill()
		victim.Wait()
	}()
	pid := victim.Process.Pid
	before := limits(t, pid)
	got, err := run(t, sandbox.Spec{}, fmt.Sprintf("renice:%d", pid))
	for _, call := range []string{"prlimit", "setpriority", "sched_setaffinity", "ioprio_set"} {
		if !strings.Contains(got, call+": operation not permitted") {
			t.Errorf("%s on the host's process %d was not refused: %q, %v", call, pid, got, err)
		}
	}
	for _, call := range []string{"self prlimit", "self setpriority", "self sched_setaffinity"} {
		if !strings.Contains(got, call+": done") {
			t.Errorf("%s was refused: %q", call, got)
		}
	}
	if after := limits(t, pid); after != before {
		t.Errorf("the host's process limits changed:\n%s\nto\n%s", before, after)
	}
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid); err != nil || prio != 20 { // the raw call's 20-nice
		t.Errorf("the host's process priority is %d, %v; want nice 0", 20-prio, err)
	}
}

func limits(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitEOF reads r until its writers are all gone, at most d; the error
// says what still held it.
func waitEOF(r *os.File, d time.Duration) error {
	r.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r)
	return err
}

// TestAttackSetsidOutlives is the seventh finding of issue 46: a child
// that called setsid kept running after its server ended. It holds the
// server's standard output; the pipe ends once every process that held
// it is gone.
func TestAttackSetsidOutlives(t *testing.T) {
	exe, _ := os.Executable()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER=setsid")
	cmd.Stdout = w
	run, err := (&sandbox.Spec{}).Prepare(cmd, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := run.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the server: %v", err)
	}
	if err := waitEOF(r, 10*time.Second); err != nil {
		t.Errorf("a setsid child of the server still runs 10s after the server ended: %v", err)
	}
}

// TestAttackOutlivesHost: the server kept running after mcpfsm was
// killed (SIGKILL, so mcpfsm stops nothing). The helper "host" plays
// mcpfsm.
func TestAttackOutlivesHost(t *testing.T) {
	exe, _ := os.Executable()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	host := exec.Command(exe)
	host.Env = append(os.Environ(), "SANDBOX_TEST_HELPER=host")
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

// TestAttackHostProc: the host's /proc showed every command line, and
// mcpfsm's ports and socket paths. The sandbox has a PID namespace and
// a /proc of its own, where the host's processes are not.
func TestAttackHostProc(t *testing.T) {
	p := fmt.Sprintf("/proc/%d/cmdline", os.Getpid())
	if got, err := run(t, sandbox.Spec{}, "read:"+p); err == nil || !strings.Contains(got, "no such file or directory") {
		t.Errorf("read the host's %s: %q, %v; want no such file or directory", p, got, err)
	}
	if got, err := run(t, sandbox.Spec{}, "read:/proc/self/status"); err != nil || !strings.Contains(got, "NSpid:") {
		t.Errorf("read its own /proc/self/status: %.100q, %v", got, err)
	}
}

// TestAttackSharedMemory is the ninth finding of issue 46: memoryMB set
// RLIMIT_DATA only, and 2 GiB of shared anonymous memory or memfd stayed
// resident under it. Where mcpfsm can make a memory cgroup (cgroup v1 as
// root, or a v2 cgroup that hands the memory controller down), the
// program is killed for it and Limit says so; where it cannot, the
// sandbox says that only private memory is bounded, and the attack is
// not run.
func TestAttackSharedMemory(t *testing.T) {
	// 512: a test binary built with -race needs that much to start.
	spec := sandbox.Spec{MemoryMB: 512}
	limits := strings.Join(spec.Describe(), "\n")
	if strings.Contains(limits, "private memory only") {
		if !strings.Contains(limits, "shared memory and memfd are not bounded, as ") {
			t.Errorf("Describe does not say why shared memory is not bounded:\n%s", limits)
		}
		t.Logf("no memory cgroup here, and the sandbox says so: %s", limits)
		return
	}
	if !strings.Contains(limits, "memoryMB 512 (a memory cgroup: shared memory and memfd count)") {
		t.Errorf("Describe = %s", limits)
	}
	exe, _ := os.Executable()
	for _, attack := range []string{"sharedmem:2048", "memfd:2048"} {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+attack)
		var limit string
		out, st := runCmdLimit(t, spec, cmd, &limit)
		if st.Success() || strings.Contains(out, "resident") {
			t.Errorf("%s under memoryMB 512: %s, %q; want killed", attack, st, out)
		}
		if want := "out of memory under the sandbox's memoryMB 512"; limit != want {
			t.Errorf("%s: Limit = %q, want %q (%s)", attack, limit, want, st)
		}
	}
}
