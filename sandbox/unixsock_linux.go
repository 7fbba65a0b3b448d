//go:build linux

package sandbox

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// blockUnixSockets keeps the calling thread, and the program it execs,
// from creating Unix sockets: socket(AF_UNIX, ...) fails with EPERM, as in
// sandbox-runtime, so that a Docker socket or an agent's socket on the
// filesystem cannot be reached (Landlock restricts connecting to one only
// from ABI 9). socketpair(2) still works: a pair is connected to nothing
// outside. A system call through another ABI than the native one (int
// 0x80 on amd64) fails with EPERM, so that none goes around the rule.
//
// The thread must have no_new_privs (Landlock's restriction set it); the
// filter is the thread's, which the exec makes the process's.
func blockUnixSockets() error {
	native, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{
		Action: seccomp.ActionErrno,
		NamesWithCondtions: []seccomp.NameWithConditions{{Name: "socket",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}}}},
	}}}
	rules, err := policy.Assemble()
	if err != nil {
		return err
	}
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	}, rules...)
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
