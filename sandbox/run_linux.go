//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Run is one sandboxed start of a command: made by [Spec.Prepare], started
// by [Run.Start], and closed by [Run.Close] once the process is gone.
type Run struct {
	spec Spec
	cmd  *exec.Cmd
	plan plan
	log  *slog.Logger
	oom  *oomWatch
	// The control socket's ends (until Start), and the proxy.
	ctl, child *os.File
	proxy      *proxy
	// The cgroup that bounds memory and processes, nil without; oom
	// keeps, once it is removed, whether it killed for memory.
	cg    *cgroup
	cgOOM atomic.Bool
}

// plan is what the launcher gets from its parent: what to run, and how.
type plan struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	Spec Spec     `json:"spec"`
	// Effective are the Spec's paths with what the sandbox adds.
	Effective Effective `json:"effective"`
	ABI       int       `json:"abi"`
	Probe     bool      `json:"probe,omitempty"`
}

// message is one report of the launcher to its parent.
type message struct {
	Proxy  int          `json:"proxy,omitempty"`  // the proxy's port inside; its listener rides along
	Exec   bool         `json:"exec,omitempty"`   // about to exec the program
	Probed bool         `json:"probed,omitempty"` // a probe's setup worked
	Error  *launchError `json:"error,omitempty"`
}

// launchError is a setup or exec failure, as the launcher reports it.
type launchError struct {
	Feature string `json:"feature,omitempty"` // an UnavailableError's
	Reason  string `json:"reason,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Errno   int    `json:"errno,omitempty"` // the exec's
	Text    string `json:"text,omitempty"`  // any other failure
}

// minABI is the oldest Landlock ABI that enforces the hosts' model: ABI 1
// and 2 cannot restrict truncate(2), so a program could empty a file it
// may not write.
const minABI = 3

// handshakeTimeout bounds the launcher's setup, from its start to the
// exec of the program.
const handshakeTimeout = 10 * time.Second

// maxPlan bounds the plan the launcher reads; the control socket's
// buffer bounds it below that.
const maxPlan = 1 << 20

// Prepare arranges for cmd, which must not have started, to run inside
// the sandbox s, and returns the Run that starts it: call [Run.Start]
// instead of cmd.Start, then cmd.Wait as usual, then [Run.Close] once
// the process is gone. cmd then runs the program itself (os.Executable,
// through /proc/self/exe) as the launcher: [Init] must be the first
// thing main does.
//
// cmd's Path, Args, Env and Dir are the program's; Prepare replaces Path,
// Args and Env with the launcher's, adds the control socket to
// ExtraFiles, and new user and network namespaces to SysProcAttr (its
// Setpgid and other fields are kept). An [*UnavailableError] says what
// this system lacks.
func (s *Spec) Prepare(cmd *exec.Cmd, o Options) (*Run, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Process != nil {
		return nil, errors.New("sandbox: Prepare: the command has started already")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	abi, err := s.available()
	if err != nil {
		return nil, err
	}
	eff, err := s.Effective(cmd.Path, cmd.Dir, cmd.Environ())
	if err != nil {
		return nil, err
	}
	sys := cmd.SysProcAttr
	if sys == nil {
		sys = &syscall.SysProcAttr{}
	}
	if sys.Credential != nil || sys.Cloneflags&syscall.CLONE_NEWUSER != 0 || len(sys.UidMappings) > 0 || sys.Chroot != "" {
		return nil, errors.New("sandbox: Prepare: cmd.SysProcAttr already sets credentials, a chroot or a user namespace")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: control socket: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Run{spec: *s, cmd: cmd, log: log, oom: &oomWatch{},
		ctl:   os.NewFile(uintptr(fds[0]), "sandbox-control"),
		child: os.NewFile(uintptr(fds[1]), "sandbox-control-child"),
		plan:  plan{Path: cmd.Path, Args: cmd.Args, Env: cmd.Environ(), Dir: cmd.Dir, Spec: *s, Effective: *eff, ABI: abi}}
	ctlFD := 3 + len(cmd.ExtraFiles)
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{launcherArg0, strconv.Itoa(ctlFD)}
	cmd.Env = []string{} // the program's is in the plan
	cmd.ExtraFiles = append(cmd.ExtraFiles, r.child)
	uid, gid := os.Getuid(), os.Getgid()
	// A new IPC namespace: the host's SysV shared memory, semaphores and
	// message queues are out of reach. The launcher dies with the thread
	// that starts it (and sets the same for the program).
	// A new PID namespace, whose init the program is (the launcher execs
	// it): when it ends, the kernel kills every process left in it, one
	// that called setsid included, and no host process can be named.
	sys.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	sys.Pdeathsig = syscall.SIGKILL
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	// The launcher is not root inside unless the host is: it keeps the
	// one capability it needs across its own exec, to bring up the
	// loopback interface, and drops it before the program's.
	// So it keeps CAP_SYS_ADMIN, to mount the protected paths read-only
	// in its mount namespace.
	sys.AmbientCaps = append(sys.AmbientCaps, unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN)
	cmd.SysProcAttr = sys
	return r, nil
}

// Start starts the command and waits, at most until ctx ends, for the
// launcher to set the sandbox up and exec the program. A sandbox that
// cannot be set up is an [*UnavailableError] (or the error of the
// setup); a program that cannot be executed is the *fs.PathError that
// cmd.Start would have returned ("fork/exec"). On an error nothing runs
// any more.
func (r *Run) Start(ctx context.Context) error {
	// The plan holds the program's environment: the launcher has its
	// copy once Start returns.
	defer func() { r.plan = plan{Path: r.plan.Path} }()
	mb, procs := r.spec.MemoryMB, r.spec.MaxProcs
	if cgroupAvailable("memory") != nil {
		mb = 0
	}
	if cgroupAvailable("pids") != nil {
		procs = 0
	}
	if mb > 0 || procs > 0 {
		cg, err := newCgroup(mb, procs)
		if err != nil {
			r.ctl.Close()
			r.child.Close()
			return fmt.Errorf("sandbox: limits: %w", err)
		}
		r.cg = cg
	}
	err := r.cmd.Start()
	r.child.Close()
	if err != nil {
		r.ctl.Close()
		r.Close()
		return namespaceError(err)
	}
	// The launcher waits for its plan: it joins the cgroup before it
	// runs anything of the program's.
	if r.cg != nil {
		if err := r.cg.join(r.cmd.Process.Pid); err != nil {
			r.ctl.Close()
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
			r.Close()
			return fmt.Errorf("sandbox: limits: %w", err)
		}
	}
	if err := r.handshake(ctx); err != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.Close()
		return err
	}
	return nil
}

// handshake hands the launcher its plan and reads its reports until it
// execs the program (or fails to).
func (r *Run) handshake(ctx context.Context) error {
	c, err := net.FileConn(r.ctl)
	r.ctl.Close()
	if err != nil {
		return fmt.Errorf("sandbox: control socket: %w", err)
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	deadline := time.Now().Add(handshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	data, err := json.Marshal(r.plan)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if _, err := conn.Write(data); err != nil {
		if errors.Is(err, syscall.EMSGSIZE) {
			return fmt.Errorf("sandbox: the program's arguments, environment and sandbox (%d bytes) are too large to hand to the launcher", len(data))
		}
		return r.silent(ctx, err)
	}
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	var failure error
	execed := false
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if errors.Is(err, io.EOF) || err == nil && n == 0 {
			break
		}
		if err != nil {
			return r.silent(ctx, err)
		}
		var m message
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			return fmt.Errorf("sandbox: the launcher's report: %w", err)
		}
		switch {
		case m.Error != nil:
			failure = r.launchFailure(m.Error)
		case m.Proxy > 0:
			if err := r.serveProxy(oob[:oobn]); err != nil {
				return err
			}
		case m.Exec, m.Probed:
			execed = true
		}
	}
	switch {
	case failure != nil:
		return failure
	case !execed:
		return errors.New("sandbox: the launcher ended before starting the program: the program that starts sandboxes must call sandbox.Init first thing in main")
	}
	return nil
}

// silent is the error of a launcher that did not answer.
func (r *Run) silent(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("sandbox: setting up: %w", context.Cause(ctx))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("sandbox: the launcher did not answer within %v: the program that starts sandboxes must call sandbox.Init first thing in main", handshakeTimeout)
	}
	return fmt.Errorf("sandbox: control socket: %w", err)
}

// launchFailure turns a launcher's report into the error Start returns.
func (r *Run) launchFailure(e *launchError) error {
	switch {
	case e.Errno != 0:
		return &fs.PathError{Op: "fork/exec", Path: r.plan.Path, Err: syscall.Errno(e.Errno)}
	case e.Feature != "":
		return &UnavailableError{Feature: e.Feature, Reason: e.Reason, Fix: e.Fix}
	}
	return errors.New("sandbox: " + e.Text)
}

// serveProxy serves the proxy on the listener the launcher sent.
func (r *Run) serveProxy(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("sandbox: the launcher sent its proxy listener badly: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return fmt.Errorf("sandbox: the launcher sent its proxy listener badly: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "sandbox-proxy")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("sandbox: proxy listener: %w", err)
	}
	r.proxy = newProxy(&r.spec, r.log)
	r.proxy.serve(ln)
	return nil
}

// Close stops the Run's proxy and ends its connections. Call it once the
// process is gone; it is idempotent.
func (r *Run) Close() {
	if r.proxy != nil {
		r.proxy.close()
	}
	if r.cg != nil {
		if r.cg.oomKilled() {
			r.cgOOM.Store(true)
		}
		if err := r.cg.remove(); err != nil {
			r.log.Warn("the sandbox's cgroup", "err", err)
		}
	}
}

// cgroupOOM reports whether the Run's memory cgroup killed a process.
func (r *Run) cgroupOOM() bool {
	return r.cgOOM.Load() || r.cg.oomKilled()
}

// Check reports whether this system can enforce s: s is valid, the
// kernel's Landlock is recent enough, the limits can apply, and a
// launcher can enter new user and network namespaces (a probe: it needs
// [Init] as Prepare does). The probe's outcome is kept for the process's
// life.
func (s *Spec) Check() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if _, err := s.available(); err != nil {
		return err
	}
	probeOnce.Do(func() { probeErr = probe() })
	return probeErr
}

var (
	probeOnce sync.Once
	probeErr  error
)

// probe starts a launcher that sets up an empty sandbox and exits.
func probe() error {
	cmd := exec.Command("/proc/self/exe")
	r, err := (&Spec{}).Prepare(cmd, Options{})
	if err != nil {
		return err
	}
	r.plan.Probe = true
	if err := r.Start(context.Background()); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("sandbox: the probe launcher: %w", err)
	}
	return nil
}

// available reports what the kernel lacks for s, without starting
// anything, and the Landlock ABI to use.
func (s *Spec) available() (int, error) {
	abi, err := landlockABI()
	if err != nil {
		return 0, err
	}
	if s.MaxProcs > 0 && os.Geteuid() == 0 && cgroupAvailable("pids") != nil {
		return 0, unavailable("limits.maxProcs", "run mcpfsm as an ordinary user, or remove limits.maxProcs",
			"mcpfsm runs as root, the kernel does not apply RLIMIT_NPROC to root, and there is no pids cgroup (%v)", cgroupAvailable("pids"))
	}
	return abi, nil
}

var (
	abiOnce sync.Once
	abiVal  int
	abiErr  error
)

// landlockABI is the kernel's Landlock ABI, as go-landlock reads it (an
// ABI 6 without the fix of its signal scoping counts as 5), or why it
// cannot be used.
func landlockABI() (int, error) {
	abiOnce.Do(func() {
		v, err := ll.LandlockGetABIVersion()
		switch {
		case errors.Is(err, syscall.ENOSYS):
			abiErr = unavailable("Landlock", "use a kernel built with CONFIG_SECURITY_LANDLOCK (Linux 6.2 or later)", "this kernel has no Landlock")
			return
		case errors.Is(err, syscall.EOPNOTSUPP):
			abiErr = unavailable("Landlock", "add landlock to the kernel's lsm= boot parameter", "Landlock is not enabled at boot")
			return
		case err != nil:
			abiErr = unavailable("Landlock", "use a kernel with Landlock enabled (Linux 6.2 or later)", "%v", err)
			return
		}
		if v >= 6 {
			if errata, err := ll.LandlockGetErrata(); err != nil || errata&2 == 0 {
				v = 5
			}
		}
		if v < minABI {
			abiErr = unavailable(fmt.Sprintf("Landlock ABI %d", minABI), "use Linux 6.2 or later",
				"this kernel's Landlock ABI is %d, which cannot keep a program from truncating files it may not write", v)
			return
		}
		abiVal = v
	})
	return abiVal, abiErr
}

// namespaceError names the missing feature when the launcher could not
// be started in new user and network namespaces.
func namespaceError(err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	if !errors.As(err, &pe) || !errors.As(err, &errno) {
		return fmt.Errorf("sandbox: start the launcher: %w", err)
	}
	feature := "unprivileged user and network namespaces"
	switch errno {
	case syscall.ENOSPC, syscall.EUSERS:
		return unavailable(feature, "raise the limit: sysctl -w user.max_user_namespaces=10000",
			"the limit of user namespaces is reached (user.max_user_namespaces is %s)", sysctl("user/max_user_namespaces"))
	case syscall.EINVAL:
		return unavailable(feature, "use a kernel built with CONFIG_USER_NS and CONFIG_NET_NS", "the kernel refused them: %v", errno)
	case syscall.EPERM, syscall.EACCES:
		switch {
		case sysctl("kernel/unprivileged_userns_clone") == "0":
			return unavailable(feature, "sysctl -w kernel.unprivileged_userns_clone=1",
				"kernel.unprivileged_userns_clone is 0")
		case sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1":
			return unavailable(feature, "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give mcpfsm an AppArmor profile that allows userns",
				"AppArmor restricts unprivileged user namespaces")
		}
		return unavailable(feature, "run mcpfsm where unprivileged user namespaces are allowed (outside a container whose seccomp profile or capability set forbids them)",
			"the system refused them: %v", errno)
	}
	return fmt.Errorf("sandbox: start the launcher: %w", err)
}

// sysctl reads /proc/sys/NAME, or returns "" when it is absent.
func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
