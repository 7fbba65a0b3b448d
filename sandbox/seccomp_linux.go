//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter compares system call arguments as the kernel reads
// them. An int argument (socket's family and type, a pid) is the low 32
// bits of its register: socket(1|1<<32, ...) is socket(AF_UNIX, ...) to
// the kernel, so a filter that compared all 64 bits would let it pass.
// go-seccomp-bpf's conditions compare 64 bits and cannot mask, so the
// filter is assembled here with golang.org/x/net/bpf; go-seccomp-bpf
// gives the architecture's audit ID and system call numbers.

// seccomp_data's layout (linux/seccomp.h).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// filterRules are what the filter refuses besides the foreign ABIs.
type filterRules struct {
	unixSockets bool // refuse socket(AF_UNIX) and socketpair(AF_UNIX) but of streams and seqpackets
	self        int  // the pid of the program (the launcher's, which the exec keeps)
}

// installFilter keeps the calling thread, and the program it execs, from
// what [seccompProgram] refuses. The thread must have no_new_privs
// (Landlock's restriction set it); the filter is the thread's, which the
// exec makes the process's.
func installFilter(r filterRules) error {
	native, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	prog, err := seccompProgram(native, r)
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

var (
	retAllow = bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	retEPERM = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
)

// seccompProgram is the filter for the architecture a:
//
//   - a system call through another ABI than the native one (int 0x80 or
//     x32 on amd64) fails with EPERM, so that none goes around a rule;
//   - io_uring_setup, io_uring_enter and io_uring_register fail with
//     EPERM: io_uring's operations (its socket and openat among them)
//     bypass seccomp;
//   - keyctl, add_key and request_key fail with EPERM (as in Docker's
//     default profile): the kernel's keyrings are not namespaced;
//   - prlimit64, sched_setaffinity, sched_setscheduler, sched_setparam
//     and sched_setattr work on the calling process (pid 0) or the
//     program (r.self) only; setpriority and ioprio_set on a process so
//     named only (not a process group or a user);
//   - with r.unixSockets, socket(AF_UNIX, ...) fails with EPERM, as in
//     sandbox-runtime, so that a Docker socket or an agent's socket
//     cannot be reached (Landlock restricts connecting to one only from
//     ABI 9), and socketpair(AF_UNIX, ...) works for SOCK_STREAM and
//     SOCK_SEQPACKET only (a datagram socket could send to a named one,
//     such as /dev/log).
//
// Every int argument is compared by its low 32 bits, as the kernel reads it.
func seccompProgram(a *arch.Info, r filterRules) ([]bpf.Instruction, error) {
	nr := func(name string) (uint32, error) {
		n, ok := a.SyscallNames[name]
		if !ok {
			return 0, fmt.Errorf("seccomp: %s has no system call %s", a.Name, name)
		}
		return uint32(n | a.SeccompMask), nil
	}
	if _, ok := a.SyscallNames["socketcall"]; ok && r.unixSockets {
		return nil, errors.New("seccomp: this architecture's socketcall(2) hides socket's family from a filter")
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.ID), SkipTrue: 1},
		retEPERM,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if a.ID == arch.X32.ID { // x32's calls share amd64's audit ID
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(arch.X32.SeccompMask), SkipFalse: 1}, retEPERM)
	}
	for _, name := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key"} {
		n, err := nr(name)
		if err != nil {
			return nil, err
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: n, SkipFalse: 1}, retEPERM)
	}
	// Each block below starts with a check of the number and returns on
	// every path once it has loaded an argument.
	block := func(name string, body ...bpf.Instruction) error {
		n, err := nr(name)
		if err != nil {
			return err
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: n, SkipFalse: uint8(len(body))})
		prog = append(prog, body...)
		return nil
	}
	self := uint32(r.self)
	// pidIs0OrSelf allows the call when argument i is 0 or the program.
	pidIs0OrSelf := func(i int) []bpf.Instruction {
		return []bpf.Instruction{
			loadArg(i),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: self, SkipTrue: 1},
			retEPERM,
			retAllow,
		}
	}
	for _, name := range []string{"prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"} {
		if err := block(name, pidIs0OrSelf(0)...); err != nil {
			return nil, err
		}
	}
	// setpriority(which, who, prio) and ioprio_set(which, who, prio): a
	// process of which's kind, and who 0 or the program.
	for _, c := range []struct {
		name    string
		process uint32
	}{{"setpriority", unix.PRIO_PROCESS}, {"ioprio_set", 1 /* IOPRIO_WHO_PROCESS */}} {
		body := append([]bpf.Instruction{
			loadArg(0),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.process, SkipTrue: 1},
			retEPERM,
		}, pidIs0OrSelf(1)...)
		if err := block(c.name, body...); err != nil {
			return nil, err
		}
	}
	if r.unixSockets {
		if err := block("socket",
			loadArg(0),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
			retEPERM,
			retAllow,
		); err != nil {
			return nil, err
		}
		if err := block("socketpair",
			loadArg(0),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			retAllow,
			loadArg(1),
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: ^uint32(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_SEQPACKET, SkipTrue: 1},
			retEPERM,
			retAllow,
		); err != nil {
			return nil, err
		}
	}
	return append(prog, retAllow), nil
}

// loadArg loads the low 32 bits of argument i, which an int argument
// is to the kernel.
func loadArg(i int) bpf.Instruction {
	off := uint32(offArgs + 8*i)
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian
		off += 4
	}
	return bpf.LoadAbsolute{Off: off, Size: 4}
}
