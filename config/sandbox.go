package config

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/tree"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// The hosts' sandbox keys (VS Code's mcp.json, Anthropic's
// sandbox-runtime): "sandboxEnabled" on a stdio server, and a "sandbox"
// block at the top of the file and on a server, whose keys the server's
// block overrides one by one. mcpfsm adds filesystem.allowRead and
// limits.
var (
	sandboxKeys     = []string{"filesystem", "network", "limits"}
	filesystemKeys  = []string{"allowRead", "denyRead", "allowWrite", "denyWrite"}
	networkKeys     = []string{"allowedDomains", "deniedDomains", "allowAllUnixSockets"}
	limitsKeys      = []string{"memoryMB", "maxProcs", "maxFiles"}
	sandboxIgnored  = []string{"ignoreViolations", "enableWeakerNestedSandbox", "enableWeakerNetworkIsolation"}
	networkIgnored  = []string{"allowUnixSockets", "allowLocalBinding", "httpProxyPort", "socksProxyPort", "allowManagedDomainsOnly"}
	limitsMaxValues = map[string]int{"memoryMB": 1 << 22, "maxProcs": 1 << 22, "maxFiles": 1 << 24}
)

// sandboxBlock is one "sandbox" object: each key nil when not given.
type sandboxBlock struct {
	lists  map[string]*[]string // filesystem and network keys
	limits map[string]*int
	flags  map[string]*bool // allowAllUnixSockets
}

// serverSandbox is what a server entry said of its sandbox.
type serverSandbox struct {
	enabled *bool
	block   *sandboxBlock
	path    string // of the entry's "sandbox" key, for warnings
}

// sandboxKey reads a server's "sandboxEnabled" or "sandbox".
func (p *parser) sandboxKey(sb *serverSandbox, m member, fpath string) {
	if m.Key == "sandboxEnabled" {
		on := p.boolean(m.Value, fpath)
		sb.enabled = &on
		return
	}
	sb.block, sb.path = p.sandboxBlock(m.Value, fpath), fpath
}

// settleSandbox gives s its effective sandbox: the top block overridden by
// the server's, when "sandboxEnabled" is true (or, with
// Options.SandboxAll, unless it is false: see sandboxAll).
func (p *parser) settleSandbox(path string, s *Server, sb *serverSandbox) {
	given := sb.enabled != nil || sb.block != nil
	if s.Type != TypeStdio && s.Type != "" && given {
		p.addf(`%s: "sandboxEnabled" and "sandbox" only apply to "command" servers`, path)
		return
	}
	switch {
	case sb.enabled != nil && !*sb.enabled:
		p.unsandboxed[s.Name] = true
	case sb.enabled != nil:
		s.Sandbox = p.effectiveSandbox(sb.block)
	case sb.block != nil && !p.opts.SandboxAll:
		p.warnf(`%s has no effect: the server runs unsandboxed without "sandboxEnabled": true`, sb.path)
	default:
		p.serverBlocks[s.Name] = sb.block
	}
}

// sandboxAll sandboxes, with Options.SandboxAll, every stdio server that
// does not say "sandboxEnabled": false.
func (p *parser) sandboxAll(cfg *Config) {
	if !p.opts.SandboxAll {
		return
	}
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		if s.Type == TypeStdio && s.Sandbox == nil && !p.unsandboxed[s.Name] {
			s.Sandbox = p.effectiveSandbox(p.serverBlocks[s.Name])
		}
	}
}

// protect gives every sandboxed server what it may never write, whatever
// its allowWrite says (sandbox.Spec.Protect): the config file Load read
// and every server's env file, through which it could start or change an
// unsandboxed server. A sandboxed server without "cwd" runs in the
// workspace (Options.WorkspaceFolder, else Options.Dir) rather than in
// mcpfsm's working directory, which the sandbox would have to make
// readable.
func (p *parser) protect(cfg *Config) {
	var files []string
	if p.opts.file != "" {
		files = append(files, p.opts.file)
	}
	for _, s := range cfg.Servers {
		if s.EnvFile != "" {
			if abs, err := filepath.Abs(s.EnvFile); err == nil {
				files = append(files, abs)
			}
		}
	}
	workspace := p.opts.WorkspaceFolder
	if workspace == "" {
		workspace = p.opts.Dir
	}
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		if s.Sandbox == nil {
			continue
		}
		s.Sandbox.Protect = append(s.Sandbox.Protect, files...)
		if s.Cwd == "" && workspace != "" {
			s.Cwd = workspace
		}
	}
}

// effectiveSandbox is the top block overridden, key by key, by own.
func (p *parser) effectiveSandbox(own *sandboxBlock) *sandbox.Spec {
	list := func(key string) []string {
		for _, b := range []*sandboxBlock{own, p.topSandbox} {
			if b != nil && b.lists[key] != nil {
				return *b.lists[key]
			}
		}
		return nil
	}
	flag := func(key string) bool {
		for _, b := range []*sandboxBlock{own, p.topSandbox} {
			if b != nil && b.flags[key] != nil {
				return *b.flags[key]
			}
		}
		return false
	}
	limit := func(key string) int {
		for _, b := range []*sandboxBlock{own, p.topSandbox} {
			if b != nil && b.limits[key] != nil {
				return *b.limits[key]
			}
		}
		return 0
	}
	return &sandbox.Spec{
		AllowRead: list("allowRead"), DenyRead: list("denyRead"), AllowWrite: list("allowWrite"), DenyWrite: list("denyWrite"),
		AllowedDomains: list("allowedDomains"), DeniedDomains: list("deniedDomains"), AllowAllUnixSockets: flag("allowAllUnixSockets"),
		MemoryMB: limit("memoryMB"), MaxProcs: limit("maxProcs"), MaxFiles: limit("maxFiles"),
	}
}

// sandboxBlock parses a "sandbox" object.
func (p *parser) sandboxBlock(v tree.Value, path string) *sandboxBlock {
	b := &sandboxBlock{lists: map[string]*[]string{}, limits: map[string]*int{}, flags: map[string]*bool{}}
	members, ok := p.object(v, path)
	if !ok {
		return b
	}
	for _, m := range members {
		fpath := pathKey(path, m.Key)
		if m.Value.Kind == tree.Null {
			continue
		}
		switch m.Key {
		case "filesystem":
			p.sandboxSection(b, m.Value, fpath, filesystemKeys, nil)
		case "network":
			p.sandboxSection(b, m.Value, fpath, networkKeys, networkIgnored)
		case "limits":
			p.sandboxSection(b, m.Value, fpath, limitsKeys, nil)
		default:
			if slices.Contains(sandboxIgnored, m.Key) {
				p.warnf("%s is ignored: mcpfsm reports what the sandbox refused and does not weaken it (a key of sandbox-runtime)", fpath)
				continue
			}
			p.addf("%s is not a sandbox key (%s)", fpath, suggest(m.Key, sandboxKeys))
		}
	}
	return b
}

// sandboxSection parses "filesystem", "network" or "limits" into b.
func (p *parser) sandboxSection(b *sandboxBlock, v tree.Value, path string, keys, ignored []string) {
	members, ok := p.object(v, path)
	if !ok {
		return
	}
	for _, m := range members {
		fpath := pathKey(path, m.Key)
		switch {
		case m.Value.Kind == tree.Null:
		case m.Key == "allowUnixSockets":
			p.warnf(`%s is ignored: on Linux a sandbox cannot allow some Unix sockets by path (as in sandbox-runtime): set "allowAllUnixSockets": true to allow them all`, fpath)
		case slices.Contains(ignored, m.Key):
			p.warnf("%s is ignored: a sandbox of mcpfsm reaches the network only through its proxy, by allowedDomains (a key of sandbox-runtime)", fpath)
		case m.Key == "allowAllUnixSockets":
			on := p.boolean(m.Value, fpath)
			b.flags[m.Key] = &on
		case !slices.Contains(keys, m.Key):
			p.addf("%s is not a key of %s (%s)", fpath, path, suggest(m.Key, keys))
		case slices.Contains(limitsKeys, m.Key):
			n := p.whole(m.Value, fpath, "a positive integer", limitsMaxValues[m.Key], "omit it for no limit")
			b.limits[m.Key] = &n
		case slices.Contains(networkKeys, m.Key):
			l := p.domains(m.Value, fpath)
			b.lists[m.Key] = &l
		default:
			l := p.sandboxPaths(m.Value, fpath)
			b.lists[m.Key] = &l
		}
	}
}

// domains parses an array of domain patterns.
func (p *parser) domains(v tree.Value, path string) []string {
	out := []string{}
	for i, d := range p.stringArray(v, path) {
		if err := sandbox.CheckDomain(d); err != nil {
			p.addf("%s[%d]: %v", path, i, err)
			continue
		}
		out = append(out, d)
	}
	return out
}

// sandboxPaths parses an array of paths: variables substituted (as in
// args), then a leading ~ made the home directory, then a relative path
// made absolute against the config file's directory.
func (p *parser) sandboxPaths(v tree.Value, path string) []string {
	out := []string{}
	for i, s := range p.stringArray(v, path) {
		epath := tree.Index(path, i)
		if s == "" {
			p.addf("%s must not be empty: give a path", epath)
			continue
		}
		if s == "~" || strings.HasPrefix(s, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				p.addf("%s: ~: %v", epath, err)
				continue
			}
			s = home + s[1:]
		} else if strings.HasPrefix(s, "~") {
			p.addf("%s: %q: only ~ (your home) is expanded, not ~user: give the path", epath, s)
			continue
		}
		if !filepath.IsAbs(s) {
			base := p.opts.Dir
			if base == "" {
				base, _ = os.Getwd()
			}
			s = filepath.Join(base, s)
			if abs, err := filepath.Abs(s); err == nil {
				s = abs
			}
		}
		out = append(out, filepath.Clean(s))
	}
	return out
}

// checkSandbox reports a sandbox this machine cannot give (see
// sandbox.Spec.Check): 'mcpfsm check' fails on it, as the server would.
func (s Server) checkSandbox() []error {
	if s.Sandbox == nil {
		return nil
	}
	if err := s.Sandbox.Check(); err != nil {
		var fix string
		if ue, ok := err.(*sandbox.UnavailableError); ok {
			fix = " (" + ue.Fix + ")"
		}
		return []error{fmt.Errorf("server %s: %w%s", s.Name, err, fix)}
	}
	if _, err := s.Sandbox.Effective(s.CommandPath(), s.Cwd, os.Environ()); err != nil {
		return []error{fmt.Errorf("server %s: %w", s.Name, err)}
	}
	return nil
}

// CommandPath is the program a stdio server runs, as os/exec finds it:
// Command, searched in mcpfsm's PATH when it names no directory.
func (s Server) CommandPath() string {
	if !strings.Contains(s.Command, "/") {
		if p, err := exec.LookPath(s.Command); err == nil {
			return p
		}
	}
	return s.Command
}
