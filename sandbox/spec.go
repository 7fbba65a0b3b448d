package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Spec says what a sandboxed program may do, in the hosts' terms (the
// "sandbox" block of VS Code's mcp.json, the schema of Anthropic's
// sandbox-runtime): reads are allowed except DenyRead, writes denied
// except AllowWrite, the network denied except AllowedDomains. The zero
// Spec reads every file, writes none and reaches no network.
//
// Paths are absolute; a deny wins over an allow that holds it. The JSON
// names of the fields are the hosts' (filesystem.allowWrite, ...), which
// package config reads.
type Spec struct {
	// AllowRead, when not nil (even empty), limits reads to these paths and
	// to what running needs: the program's own directory, the interpreter
	// its #! line names, the system's executables, libraries and /etc, a
	// few devices (/dev/null, /dev/urandom, ...) and the working
	// directory. Nil reads everything but DenyRead. An extension of
	// mcpfsm's: the hosts have no such key.
	AllowRead []string `json:"allowRead,omitempty"`
	// DenyRead are paths whose files cannot be read, even inside AllowRead
	// or AllowWrite.
	DenyRead []string `json:"denyRead,omitempty"`
	// AllowWrite are the only paths that can be written (created, changed,
	// removed); what can be written can be read.
	AllowWrite []string `json:"allowWrite,omitempty"`
	// DenyWrite are paths inside AllowWrite that cannot be written.
	DenyWrite []string `json:"denyWrite,omitempty"`
	// Protect are paths that cannot be written, created or removed,
	// whatever AllowWrite says, set by the program that reads the
	// configuration rather than by the configuration: package config
	// puts the config file there and every env file it names, so that a
	// sandboxed server cannot rewrite what starts the servers. The
	// sandbox adds its own (see [Spec.Effective]).
	Protect []string `json:"-"`

	// AllowedDomains are the hosts the program may reach, by name, through
	// the filtering HTTP proxy that the sandbox runs (HTTP_PROXY and
	// HTTPS_PROXY point at it): "example.com" is that name, "*.example.com"
	// any name below it (not example.com itself). An IP address is reached
	// only if it is listed as such. None: no network at all.
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// DeniedDomains are refused even when AllowedDomains matches them;
	// "evil.example.com" also refuses every name below it.
	DeniedDomains []string `json:"deniedDomains,omitempty"`
	// AllowAllUnixSockets lets the program create Unix sockets, and so
	// connect to one it can name on the filesystem (a Docker socket, an
	// agent's socket). By default it cannot, as in sandbox-runtime.
	AllowAllUnixSockets bool `json:"allowAllUnixSockets,omitempty"`

	// MemoryMB bounds the memory the program maps writable (RLIMIT_DATA), in
	// MiB; zero is no bound. It is not a bound on address space: Go and
	// Node reserve far more of that than they use. Where mcpfsm can make
	// a memory cgroup (cgroup v1 as root, or a v2 cgroup whose
	// subtree_control has memory), it bounds the memory of the program
	// and its children together, shared memory and memfd included, and
	// the kernel kills a process past it; elsewhere shared memory is not
	// bounded, as [Spec.Describe] says.
	MemoryMB int `json:"memoryMB,omitempty"`
	// MaxProcs bounds the processes and threads the program and its
	// children run at once (RLIMIT_NPROC, counted in the sandbox's own user
	// namespace, and a pids cgroup's pids.max where mcpfsm can make one);
	// zero is no bound. The kernel does not apply RLIMIT_NPROC to root, so
	// without a pids cgroup a Spec with MaxProcs cannot be enforced when
	// the host runs as root.
	MaxProcs int `json:"maxProcs,omitempty"`
	// MaxFiles bounds the open file descriptors of each process
	// (RLIMIT_NOFILE); zero is no bound.
	MaxFiles int `json:"maxFiles,omitempty"`
}

// Network reports whether the program gets the proxy: AllowedDomains is
// not empty.
func (s *Spec) Network() bool { return len(s.AllowedDomains) > 0 }

// Validate reports a Spec that no system could enforce: a relative or
// empty path, a malformed domain pattern, a negative limit. The error names
// the field.
func (s *Spec) Validate() error {
	var errs []error
	for _, l := range []struct {
		name  string
		paths []string
	}{{"AllowRead", s.AllowRead}, {"DenyRead", s.DenyRead}, {"AllowWrite", s.AllowWrite}, {"DenyWrite", s.DenyWrite}, {"Protect", s.Protect}} {
		for i, p := range l.paths {
			if err := CheckPath(p); err != nil {
				errs = append(errs, fmt.Errorf("sandbox: %s[%d]: %w", l.name, i, err))
			}
		}
	}
	for _, l := range []struct {
		name    string
		domains []string
	}{{"AllowedDomains", s.AllowedDomains}, {"DeniedDomains", s.DeniedDomains}} {
		for i, d := range l.domains {
			if err := CheckDomain(d); err != nil {
				errs = append(errs, fmt.Errorf("sandbox: %s[%d]: %w", l.name, i, err))
			}
		}
	}
	for _, l := range []struct {
		name string
		n    int
	}{{"MemoryMB", s.MemoryMB}, {"MaxProcs", s.MaxProcs}, {"MaxFiles", s.MaxFiles}} {
		if l.n < 0 {
			errs = append(errs, fmt.Errorf("sandbox: %s is %d: give a positive number, or zero for no bound", l.name, l.n))
		}
	}
	return errors.Join(errs...)
}

// CheckPath reports a path a Spec cannot hold: empty, relative, or with a
// NUL character.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("a path must not be empty")
	case strings.ContainsRune(p, 0):
		return errors.New("a path must not contain a NUL character")
	case !filepath.IsAbs(p):
		return fmt.Errorf("%q is not an absolute path", p)
	}
	return nil
}

// CheckDomain reports a domain pattern that matches nothing: it must be a
// host name ("api.example.com"), "*." and a host name ("*.example.com"),
// or an IP address, without a scheme, port or path.
func CheckDomain(d string) error {
	name := strings.TrimPrefix(d, "*.")
	switch {
	case d == "":
		return errors.New("a domain must not be empty")
	case d == "*":
		return errors.New(`"*" would allow every host: list the domains the server needs`)
	case strings.Contains(d, "://") || strings.ContainsAny(d, "/?#@"):
		return fmt.Errorf("%q is not a domain: give the host name alone, such as api.example.com", d)
	case strings.Contains(name, "*"):
		return fmt.Errorf(`%q: a wildcard may only stand first, as "*.example.com"`, d)
	case strings.Count(name, ":") == 1:
		return fmt.Errorf("%q: give the host without a port (every port of an allowed host is allowed)", d)
	}
	for _, label := range strings.Split(strings.Trim(normalHost(name), "[]"), ".") {
		if label == "" && !strings.Contains(name, ":") {
			return fmt.Errorf("%q is not a valid host name", d)
		}
	}
	return nil
}

// normalHost is a host name as the proxy compares it: lower case, without
// a trailing dot or the brackets of an IPv6 address.
func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// matchDomain reports whether host matches pattern.
func matchDomain(pattern, host string) bool {
	pattern = normalHost(pattern)
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return pattern == host
}

// Allows reports whether the proxy lets the program connect to host (a
// name or an IP address, without a port): DeniedDomains first, then
// AllowedDomains. The reason names the key that decided.
func (s *Spec) Allows(host string) (ok bool, reason string) {
	host = normalHost(host)
	for _, d := range s.DeniedDomains {
		// A denied name covers the names below it, as "*." would.
		if matchDomain(d, host) || !strings.HasPrefix(d, "*.") && matchDomain("*."+d, host) {
			return false, "network.deniedDomains has " + d
		}
	}
	for _, d := range s.AllowedDomains {
		if matchDomain(d, host) {
			return true, "network.allowedDomains has " + d
		}
	}
	return false, "not in network.allowedDomains"
}

// Describe says what s allows, one line an aspect (read, write, network,
// limits), for 'mcpfsm check' and the console.
func (s *Spec) Describe() []string {
	read := "everything"
	if s.AllowRead != nil {
		read = "only " + list(s.AllowRead, "nothing") + ", and what running needs"
	}
	if len(s.DenyRead) > 0 {
		read += "; not " + list(s.DenyRead, "")
	}
	write := list(s.AllowWrite, "nowhere")
	if len(s.DenyWrite) > 0 && len(s.AllowWrite) > 0 {
		write += "; not " + list(s.DenyWrite, "")
	}
	network := "none"
	if s.Network() {
		network = list(s.AllowedDomains, "") + " through mcpfsm's proxy"
		if len(s.DeniedDomains) > 0 {
			network += "; not " + list(s.DeniedDomains, "")
		}
	}
	if !s.AllowAllUnixSockets {
		network += "; no Unix sockets"
	}
	out := []string{"read: " + read, "write: " + write, "network: " + network}
	var limits []string
	for _, l := range []struct {
		name string
		n    int
	}{{"memoryMB", s.MemoryMB}, {"maxProcs", s.MaxProcs}, {"maxFiles", s.MaxFiles}} {
		if l.n > 0 {
			limits = append(limits, fmt.Sprintf("%s %d", l.name, l.n))
		}
		if l.n > 0 && l.name == "memoryMB" {
			limits[len(limits)-1] += " (" + memoryBound() + ")"
		}
	}
	if len(limits) > 0 {
		out = append(out, "limits: "+strings.Join(limits, ", "))
	}
	return out
}

func list(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}
