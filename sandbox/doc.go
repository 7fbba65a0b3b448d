// Package sandbox runs a program with least privilege on Linux, in the
// hosts' terms: the "sandbox" block of VS Code's mcp.json, the schema of
// Anthropic's sandbox-runtime. A [Spec] lists what the program may read
// (everything but DenyRead, or only AllowRead), write (only AllowWrite,
// but not DenyWrite) and reach (only AllowedDomains, by name, through an
// HTTP proxy), and its limits (memory, processes, open files).
//
// It needs no privileges, no Docker and no helper binary: the program
// that starts a sandboxed command re-executes itself as a small launcher
// (so [Init] must come first in its main, as with docker's reexec). The
// launcher starts in new user, network, IPC, mount and PID namespaces
// (where only a loopback interface exists, and the program is the init
// of its PID namespace, so that nothing it starts outlives it), brings
// that interface up, listens there on a free port and hands the listener
// to its parent, which serves the filtering proxy on it and dials out
// from the host's namespace; then it mounts the protected paths
// read-only and a /proc of its own, restricts itself with Landlock
// (files, and signals and abstract sockets outside its domain), rlimits,
// no_new_privs and a seccomp filter (no io_uring, no keyring, no change to
// other processes, and no Unix sockets unless AllowAllUnixSockets), drops
// every capability, closes what it inherited above standard error, and
// execs the program, which inherits all of it, as do its children.
// [Spec.Effective] says what the sandbox adds to a Spec's lists.
// HTTP_PROXY and HTTPS_PROXY (and their lower-case forms) point the
// program at the proxy; a program that ignores them has no network.
//
// A system that cannot give what a Spec asks (no Landlock, or an ABI
// before 3; user namespaces forbidden; a memory-hungry limit under root)
// makes [Spec.Prepare] or [Run.Start] fail with an [*UnavailableError]
// that names the missing feature and its fix: a program is never started
// unsandboxed instead. Outside Linux every Spec is unavailable.
//
// A *Spec is a conn.Launcher ([Spec.Launch]): package conn's Stdio
// transport runs a server in a sandbox when its Launcher field is a
// *Spec, and package conn itself does not import this package. Package
// config reads the hosts' keys into a Spec.
package sandbox
