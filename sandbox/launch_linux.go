//go:build linux

package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// launcherArg0 is the argv[0] that makes [Init] run the launcher.
const launcherArg0 = "mcpfsm-sandbox-launcher"

// Init runs the sandbox's launcher when the program was started as one
// (by [Run.Start]), and returns at once otherwise. Call it first thing in
// main, before flags are parsed or goroutines started, in every program
// that starts sandboxed commands (and in the TestMain of tests that do):
//
//	func main() {
//		sandbox.Init()
//		...
//	}
//
// The launcher enters the sandbox (it starts in new user and network
// namespaces), brings up the loopback interface, hands the proxy's
// listener to its parent, restricts itself (Landlock, rlimits,
// no_new_privs, no Unix sockets, no capabilities) and execs the program;
// it never returns.
func Init() {
	if len(os.Args) != 2 || os.Args[0] != launcherArg0 {
		return
	}
	os.Exit(launch(os.Args[1]))
}

// Exit statuses of a launcher that did not exec the program.
const (
	exitSetup = 125 // the sandbox could not be set up (reported to the parent)
	exitExec  = 127 // the program could not be executed (reported to the parent)
)

// launcher is the child side of a Run.
type launcher struct {
	ctl    *net.UnixConn
	ctlFD  int // the control socket's descriptor number
	parent int // the pid of the process that started the launcher
	plan   plan
}

func launch(fdArg string) int {
	// Capabilities and the exec belong to one thread.
	runtime.LockOSThread()
	fd, err := strconv.Atoi(fdArg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox launcher: bad control descriptor", fdArg)
		return exitSetup
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "sandbox-control")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox launcher:", err)
		return exitSetup
	}
	l := &launcher{ctl: c.(*net.UnixConn), ctlFD: fd, parent: os.Getppid()}
	buf := make([]byte, maxPlan)
	n, err := l.ctl.Read(buf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox launcher: reading the plan:", err)
		return exitSetup
	}
	if err := json.Unmarshal(buf[:n], &l.plan); err != nil {
		l.fail(err)
		return exitSetup
	}
	env, err := l.setup()
	if err != nil {
		l.fail(err)
		return exitSetup
	}
	if l.plan.Probe {
		l.send(message{Probed: true}, nil)
		return 0
	}
	// Nothing of the host's reaches the program but its standard
	// descriptors and the caller's ExtraFiles (those before the control
	// socket): a descriptor mcpfsm inherited without close-on-exec (a
	// shell's 7<secret) is closed by the exec.
	if err := unix.CloseRange(uint(l.ctlFD), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		if err := closeOnExecAbove(l.ctlFD); err != nil {
			l.fail(fmt.Errorf("closing the host's descriptors: %w", err))
			return exitSetup
		}
	}
	// The program dies with mcpfsm (the thread that started the launcher,
	// see prctl(2)); the exec keeps this, as nothing is set-user-ID or
	// privileged any more. If the parent is gone already, stop here.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		l.fail(fmt.Errorf("PR_SET_PDEATHSIG: %w", err))
		return exitSetup
	}
	if os.Getppid() != l.parent {
		return exitSetup
	}
	l.send(message{Exec: true}, nil)
	// The data limit comes last: the launcher's own runtime maps what it
	// has by now, and the exec needs little more.
	if mb := l.plan.Spec.MemoryMB; mb > 0 {
		if err := setLimit(unix.RLIMIT_DATA, uint64(mb)<<20); err != nil {
			l.fail(fmt.Errorf("limits.memoryMB: %w", err))
			return exitSetup
		}
	}
	err = syscall.Exec(l.plan.Path, l.plan.Args, env)
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = syscall.EINVAL
	}
	l.send(message{Error: &launchError{Errno: int(errno)}}, nil)
	return exitExec
}

// setup enters the sandbox, short of the exec, and returns the program's
// environment.
func (l *launcher) setup() ([]string, error) {
	p := &l.plan
	env := p.Env
	if err := loopbackUp(); err != nil {
		return nil, unavailable("a loopback interface inside the sandbox's network namespace",
			"let user namespaces keep their capabilities (sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for mcpfsm), and keep CAP_NET_ADMIN in mcpfsm's capability bounding set",
			"bringing up lo: %v", err)
	}
	if p.Spec.Network() {
		port, err := l.sendProxy()
		if err != nil {
			return nil, err
		}
		env = withEnv(env, proxyEnv(port))
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, unavailable("a mount namespace", "run mcpfsm where user namespaces may mount (outside a container whose seccomp profile forbids mount)", "making / private: %v", err)
	}
	if err := readOnlyOutside(canonicalAll(paths(p.Effective.Write))); err != nil {
		return nil, unavailable("a read-only view of the filesystem", "use Linux 5.12 or later (mount_setattr), outside a container whose seccomp profile forbids mount", "%v", err)
	}
	// A protected path that exists is a read-only mount; one that does
	// not is refused to Landlock's rules, which split the directory that
	// would hold it (see fsRules).
	present, absent := existing(mandatory(p.Effective.DenyWrite))
	if err := protectMounts(present); err != nil {
		return nil, unavailable("read-only mounts of the protected paths", "run mcpfsm where user namespaces may mount (outside a container whose seccomp profile forbids mount)", "%v", err)
	}
	// A /proc of the sandbox's PID namespace: the host's processes (their
	// command lines, sockets and ports) are not listed, and /proc/self
	// and getpid agree (Landlock's psx, which restricts every thread,
	// needs that). The kernel refuses it where the host's /proc is
	// partly hidden, as in some containers.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, unavailable("a /proc of the sandbox's own", "run mcpfsm where a user namespace may mount proc (outside a container that masks parts of /proc)", "mounting /proc: %v", err)
	}

	cfg := landlockConfig(p.ABI)
	rules, err := fsRules(&p.Effective, uint64(cfg.HandledAccessFS), absent...)
	if err != nil {
		return nil, err
	}
	ll := make([]landlock.Rule, 0, len(rules))
	for _, r := range rules {
		// Every rule grants: a path gone since it was listed (a
		// temporary file in a split /tmp) is granted nothing.
		ll = append(ll, landlock.PathAccess(landlock.AccessFSSet(r.Access), r.Path).IgnoreIfMissing())
	}
	if err := cfg.Restrict(ll...); err != nil {
		return nil, unavailable(fmt.Sprintf("Landlock ABI %d", p.ABI), "use a kernel whose Landlock works (Linux 6.2 or later)", "%v", err)
	}
	for _, lim := range []struct {
		name     string
		resource int
		n        int
	}{{"limits.maxFiles", unix.RLIMIT_NOFILE, p.Spec.MaxFiles}, {"limits.maxProcs", unix.RLIMIT_NPROC, p.Spec.MaxProcs}} {
		if lim.n > 0 {
			if err := setLimit(lim.resource, uint64(lim.n)); err != nil {
				return nil, fmt.Errorf("%s: %w", lim.name, err)
			}
		}
	}
	// A session keyring of its own: the host's keys are not the
	// program's (the filter then refuses the keyring calls altogether).
	if _, err := unix.KeyctlInt(unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0, 0, 0); err != nil && !errors.Is(err, unix.ENOSYS) {
		return nil, fmt.Errorf("a session keyring of its own: %w", err)
	}
	if err := installFilter(filterRules{unixSockets: !p.Spec.AllowAllUnixSockets, self: os.Getpid()}); err != nil {
		return nil, unavailable("a seccomp filter", `use a kernel with seccomp filters (and, on an architecture with socketcall(2), set "allowAllUnixSockets": true)`, "%v", err)
	}
	if err := dropCapabilities(); err != nil {
		return nil, fmt.Errorf("dropping capabilities: %w", err)
	}
	return env, nil
}

// sendProxy listens on a free loopback port inside the namespace and
// hands the listener to the parent, which serves the proxy on it from the
// host's namespace.
func (l *launcher) sendProxy() (int, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("the proxy's listener: %w", err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return 0, fmt.Errorf("the proxy's listener: %w", err)
	}
	defer f.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if err := l.send(message{Proxy: port}, unix.UnixRights(int(f.Fd()))); err != nil {
		return 0, fmt.Errorf("handing the proxy's listener over: %w", err)
	}
	return port, nil
}

func (l *launcher) send(m message, oob []byte) error {
	data, _ := json.Marshal(m)
	_, _, err := l.ctl.WriteMsgUnix(data, oob, nil)
	return err
}

// fail reports err to the parent.
func (l *launcher) fail(err error) {
	var ue *UnavailableError
	e := &launchError{Text: err.Error()}
	if errors.As(err, &ue) {
		e = &launchError{Feature: ue.Feature, Reason: ue.Reason, Fix: ue.Fix}
	}
	if l.send(message{Error: e}, nil) != nil {
		fmt.Fprintln(os.Stderr, "sandbox launcher:", err)
	}
}

// landlockConfig restricts what the kernel's ABI can, files and IPC
// scopes; the network is the namespace's.
func landlockConfig(abi int) landlock.Config {
	presets := []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
		landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	c := presets[min(abi, len(presets)-1)]
	c.HandledAccessNet = 0
	return c
}

// loopbackUp brings up lo, which a new network namespace has down.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
}

// setLimit lowers a resource's soft and hard limits to n, or to the hard
// limit when that is lower already: the sandbox never raises one.
func setLimit(resource int, n uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(resource, &cur); err != nil {
		return err
	}
	n = min(n, cur.Max)
	return unix.Setrlimit(resource, &unix.Rlimit{Cur: n, Max: n})
}

// dropCapabilities leaves the exec'd program none: the ambient set that
// kept CAP_NET_ADMIN, the bounding set (a root inside would get it back
// at exec) and the thread's own sets.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return err
	}
	if os.Getuid() == 0 {
		for c := 0; c < 64; c++ { // past the kernel's last one, EINVAL
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
				return err
			}
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// proxyEnv are the variables that point a program at the proxy on port.
func proxyEnv(port int) []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	var out []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		out = append(out, k+"="+u)
	}
	return out
}

// withEnv returns env with extra's names replaced by extra's entries.
func withEnv(env, extra []string) []string {
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for _, e := range extra {
			if strings.HasPrefix(e, name+"=") {
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// closeOnExecAbove marks every open descriptor from fd up close-on-exec,
// for kernels without close_range(2) (before 5.11).
func closeOnExecAbove(fd int) error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
	return nil
}

// mandatory are the paths of l that the sandbox protects whatever the
// Spec says.
func mandatory(l []Path) []string {
	var out []string
	for _, p := range l {
		if p.Added == addedMandatory {
			out = append(out, canonical(p.Path))
		}
	}
	return out
}

// existing splits paths into those that exist and those that do not.
func existing(paths []string) (present, absent []string) {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			present = append(present, p)
		} else {
			absent = append(absent, p)
		}
	}
	return present, absent
}

// protectMounts makes each of paths a read-only bind mount of itself in
// the launcher's mount namespace (which the program inherits): nothing
// beneath it can be written, created, removed or have its metadata
// changed, and it cannot be renamed or removed (a mount point is busy),
// while the directory that holds it stays as writable as the Spec says.
// The mounts do not reach the host's namespace.
func protectMounts(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	// Parents first: a path's mount must not hide one beneath it.
	slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s: %w", p, err)
		}
		// A remount in a user namespace keeps the flags the mount had
		// (they are locked), and adds read-only.
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		const locked = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME
		flags := uintptr(st.Flags) & locked
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|flags, ""); err != nil {
			return fmt.Errorf("making %s read-only: %w", p, err)
		}
	}
	return nil
}

// readOnlyOutside makes every mount read-only in the launcher's mount
// namespace but bind mounts of the writable paths, so that what Landlock
// does not cover (chmod, chown, utimes, setxattr) is refused outside
// them as writes are. Devices stay writable: a read-only mount keeps
// their inodes, not their drivers, from change.
func readOnlyOutside(writable []string) error {
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("making / read-only: %w", err)
	}
	slices.SortFunc(writable, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	clear := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, p := range writable {
		if _, err := os.Stat(p); err != nil {
			continue // nothing there to write
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s: %w", p, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, clear); err != nil && !errors.Is(err, unix.EPERM) {
			// EPERM: the host's mount is read-only itself (locked).
			return fmt.Errorf("making %s writable: %w", p, err)
		}
	}
	return nil
}
