//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/mcpfsm/mcpfsm/sandbox"
	"golang.org/x/sys/unix"
)

// attacks are the helper's actions of a hostile server, each an escape
// that a red team found (issue 46): the helper tries it inside the
// sandbox and reports how it went, an error when it was refused.
var attacks = map[string]func(arg string) (string, error){
	// setsid starts /bin/sleep in a session of its own, holding the
	// helper's standard output, and returns at once.
	"setsid": func(string) (string, error) {
		c := exec.Command("/bin/sleep", "60")
		c.Stdout = os.Stdout
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			return "", err
		}
		return "started\n", c.Process.Release()
	},
	// host (not run in a sandbox) is mcpfsm: it starts /bin/sleep in a
	// sandbox, holding its standard output, says "ready" and waits to be
	// killed.
	"host": func(string) (string, error) {
		c := exec.Command("/bin/sleep", "60")
		c.Stdout = os.Stdout
		r, err := (&sandbox.Spec{}).Prepare(c, sandbox.Options{})
		if err != nil {
			return "", err
		}
		if err := r.Start(context.Background()); err != nil {
			return "", err
		}
		fmt.Println("ready")
		select {}
	},
	// sandboxed:ACTION plays mcpfsm, as whatever user the test made it:
	// it runs the helper with ACTION in a sandbox (allowAllUnixSockets
	// unset), holding the pipe of its standard output, and reports what
	// the helper wrote, and whether anything still held the pipe 10s
	// after the helper ended.
	"sandboxed": func(action string) (string, error) {
		exe, _ := os.Executable()
		r, w, err := os.Pipe()
		if err != nil {
			return "", err
		}
		defer r.Close()
		c := exec.Command(exe)
		c.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
		c.Stdout, c.Stderr = w, w
		run, err := (&sandbox.Spec{}).Prepare(c, sandbox.Options{})
		if err != nil {
			return "", err
		}
		defer run.Close()
		err = run.Start(context.Background())
		w.Close()
		if err != nil {
			return "", err
		}
		werr := c.Wait()
		r.SetReadDeadline(time.Now().Add(10 * time.Second))
		out, err := io.ReadAll(r)
		if err != nil {
			return fmt.Sprintf("host uid %d\n", os.Getuid()) + string(out), fmt.Errorf("the server's output was held 10s after it ended: %w", err)
		}
		return fmt.Sprintf("host uid %d\n", os.Getuid()) + string(out), werr
	},
	// rename:OLD:NEW renames OLD.
	"rename": func(arg string) (string, error) {
		from, to, _ := strings.Cut(arg, ":")
		return "", os.Rename(from, to)
	},
	// create:PATH makes the directories that lead to PATH and writes it.
	"create": func(path string) (string, error) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		return "", os.WriteFile(path, []byte("created"), 0o644)
	},
	// symlink:TARGET:LINK makes LINK a symbolic link to TARGET.
	"symlink": func(arg string) (string, error) {
		target, link, _ := strings.Cut(arg, ":")
		return "", os.Symlink(target, link)
	},
	// remove:PATH removes PATH and all beneath it.
	"remove": func(path string) (string, error) {
		return "", os.RemoveAll(path)
	},
	// chmod:PATH makes PATH writable by all.
	"chmod": func(path string) (string, error) {
		return "", os.Chmod(path, 0o777)
	},
	// socket64:PATH creates a socket of family 1|1<<32, which the kernel
	// reads as AF_UNIX, and connects it to the Unix socket PATH.
	"socket64": func(path string) (string, error) {
		fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, 1|1<<32, unix.SOCK_STREAM, 0)
		if errno != 0 {
			return "", fmt.Errorf("socket: %w", errno)
		}
		defer unix.Close(int(fd))
		if err := unix.Connect(int(fd), &unix.SockaddrUnix{Name: path}); err != nil {
			return "", fmt.Errorf("connect: %w", err)
		}
		return "connected\n", nil
	},
	// iouring sets up an io_uring, whose operations (socket, openat)
	// seccomp does not see.
	"iouring": func(string) (string, error) {
		var params [120]byte // struct io_uring_params
		fd, _, errno := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno != 0 {
			return "", fmt.Errorf("io_uring_setup: %w", errno)
		}
		unix.Close(int(fd))
		return "io_uring set up\n", nil
	},
	// sharedmem:MB maps MB MiB of shared anonymous memory and touches
	// every page; memfd:MB does the same with a memfd.
	"sharedmem": func(arg string) (string, error) { return touchShared(arg, -1) },
	"memfd": func(arg string) (string, error) {
		fd, err := unix.MemfdCreate("attack", 0)
		if err != nil {
			return "", fmt.Errorf("memfd_create: %w", err)
		}
		return touchShared(arg, fd)
	},
	// dgram:PATH sends a datagram to the named socket PATH from one end of
	// a datagram socketpair.
	"dgram": func(path string) (string, error) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socketpair: %w", err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if err := unix.Sendto(fds[0], []byte("from the sandbox"), 0, &unix.SockaddrUnix{Name: path}); err != nil {
			return "", fmt.Errorf("sendto: %w", err)
		}
		return "sent\n", nil
	},
	// seqpacket makes a seqpacket socketpair, which must keep working.
	"seqpacket": func(string) (string, error) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return "", fmt.Errorf("socketpair: %w", err)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		return "paired\n", nil
	},
	// fd:N reads the descriptor N, which the host had open.
	"fd": func(arg string) (string, error) {
		n, _ := strconv.Atoi(arg)
		buf := make([]byte, 64)
		k, err := unix.Read(n, buf)
		if err != nil {
			return "", fmt.Errorf("read fd %d: %w", n, err)
		}
		return string(buf[:k]), nil
	},
	// keyring reads the session keyring's id.
	"keyring": func(string) (string, error) {
		id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		if err != nil {
			return "", fmt.Errorf("keyctl: %w", err)
		}
		return fmt.Sprintf("session keyring %d\n", id), nil
	},
	// shm:KEY attaches the host's SysV shared memory segment KEY.
	"shm": func(arg string) (string, error) {
		key, _ := strconv.Atoi(arg)
		id, err := unix.SysvShmGet(key, 0, 0)
		if err != nil {
			return "", fmt.Errorf("shmget: %w", err)
		}
		return fmt.Sprintf("segment %d\n", id), nil
	},
	// renice:PID changes another process: its open-file limit (prlimit),
	// its priority, CPU affinity and I/O priority, and reports each.
	"renice": func(arg string) (string, error) {
		pid, _ := strconv.Atoi(arg)
		var out strings.Builder
		var errs []string
		try := func(name string, err error) {
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			} else {
				fmt.Fprintf(&out, "%s: done\n", name)
			}
		}
		try("prlimit", unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 8, Max: 8}, nil))
		try("setpriority", unix.Setpriority(unix.PRIO_PROCESS, pid, 19))
		var set unix.CPUSet
		set.Set(0)
		try("sched_setaffinity", unix.SchedSetaffinity(pid, &set))
		_, _, errno := unix.RawSyscall(unix.SYS_IOPRIO_SET, 1, uintptr(pid), 3<<13|7) // IOPRIO_WHO_PROCESS, idle class
		if errno != 0 {
			try("ioprio_set", errno)
		} else {
			try("ioprio_set", nil)
		}
		// The program may still do all of it to itself.
		try("self prlimit", unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, new(unix.Rlimit)))
		try("self setpriority", unix.Setpriority(unix.PRIO_PROCESS, 0, 1))
		try("self sched_setaffinity", unix.SchedSetaffinity(os.Getpid(), &set))
		if len(errs) > 0 {
			return out.String(), fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return out.String(), nil
	},
}

// touchShared maps MB MiB shared, of fd (-1: anonymous), and writes to
// every page, so that all of it is resident.
func touchShared(arg string, fd int) (string, error) {
	mb, _ := strconv.Atoi(arg)
	size := mb << 20
	flags := unix.MAP_SHARED
	if fd < 0 {
		flags |= unix.MAP_ANONYMOUS
	} else if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return "", fmt.Errorf("ftruncate: %w", err)
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return "", fmt.Errorf("mmap: %w", err)
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return fmt.Sprintf("resident %d MiB\n", mb), nil
}
