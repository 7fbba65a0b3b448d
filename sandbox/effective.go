package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// What running needs, besides the program's own files, when AllowRead
// limits reads: the system's executables, libraries and configuration, and
// a few devices. The devices that swallow or give nothing can be written.
var (
	systemReads  = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix/store"}
	deviceReads  = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	deviceWrites = []string{"/dev/null", "/dev/zero", "/dev/full"}
)

// ProtectedNames are the entries of the working directory (the
// workspace) that a sandboxed program can never write, create or
// remove, whatever AllowWrite says, and of each writable directory and
// those below it where they exist: the files through which a host, an
// editor, an agent or git would run what the program put there.
var ProtectedNames = []string{".vscode", ".mcp.json", ".cursor", ".gemini", ".codex", ".claude",
	".git/hooks", ".git/config", ".envrc"}

// ProtectedHome are the paths under the home directory a sandboxed
// program can never write: the shells' startup files, and what ssh, git
// and the programs on the user's PATH read.
var ProtectedHome = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".config/fish", ".inputrc",
	".ssh", ".gitconfig", ".config/git", ".local/bin"}

// Path is one entry of an [Effective] list.
type Path struct {
	Path string
	// Added says why the sandbox added the path ("what running needs",
	// "mandatory"); empty when the Spec named it.
	Added string
	// Absent marks a mandatory path that did not exist when the list was
	// made: the directory that would hold it is split (nothing can be
	// created directly in it).
	Absent bool
}

// Effective is what a [Spec] gives one program: the Spec's lists with
// what the sandbox adds to them, as [Spec.Prepare] enforces them and
// 'mcpfsm check' prints them.
type Effective struct {
	// ReadAll reads everything but DenyRead (AllowRead was nil); Read
	// is then empty.
	ReadAll                          bool
	Read, DenyRead, Write, DenyWrite []Path
}

// Why the sandbox adds a path.
const (
	addedNeeds     = "what running needs"
	addedMandatory = "mandatory"
	addedState     = "mcpfsm's state"
)

// Effective returns what s gives the program at path run in dir (the
// working directory; empty is the caller's) with the environment env
// (for the PATH that a "#!/usr/bin/env node" line searches):
//
//   - with AllowRead set, what running needs: the system's directories,
//     the working directory, the program's file and the interpreter its
//     #! line names, and the libraries beside a bin directory (PREFIX/lib
//     for PREFIX/bin/node, node_modules for node_modules/.bin/x); never a
//     parent directory: an added path that is /, the home directory or an
//     ancestor of mcpfsm's state directory is an error naming it;
//   - DenyRead: mcpfsm's state directory (tokens, credentials), when it
//     exists;
//   - DenyWrite: [Spec.Protect], [ProtectedNames] in the working
//     directory (and those that exist in each writable directory and
//     below it, 4 levels and 2000 directories deep in all),
//     [ProtectedHome], and mcpfsm's state and configuration directories,
//     where a write path holds them
//     (or, for those that exist, lies beneath them), marked "mandatory":
//     the launcher mounts each that exists read-only in a mount namespace
//     of its own, so that the directory that holds it stays writable. One
//     that does not exist (marked Absent) cannot be kept from creation by
//     a mount (which needs a file to mount on, and the sandbox creates
//     none in the user's directories), nor by Landlock, which cannot tell
//     names apart: the directory that would hold it is split like one
//     that holds a denyWrite path, and nothing can be created directly in
//     it, while its entries stay writable.
func (s *Spec) Effective(path, dir string, env []string) (*Effective, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	dir = absIn(dir, "")
	home, _ := os.UserHomeDir()
	state := stateDir(home)
	e := &Effective{ReadAll: s.AllowRead == nil}
	named := func(l []string) []Path {
		out := make([]Path, 0, len(l))
		for _, p := range l {
			out = append(out, Path{Path: filepath.Clean(p)})
		}
		return out
	}
	if !e.ReadAll {
		e.Read = named(s.AllowRead)
		var errs []error
		for _, p := range runtimeNeeds(path, dir, env) {
			if err := checkAdded(p, home, state); err != nil {
				errs = append(errs, err)
				continue
			}
			e.Read = appendNew(e.Read, Path{Path: p, Added: addedNeeds})
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	e.DenyRead = named(s.DenyRead)
	if _, err := os.Lstat(state); state != "" && err == nil {
		e.DenyRead = appendNew(e.DenyRead, Path{Path: state, Added: addedState})
	}
	e.Write = named(s.AllowWrite)
	e.DenyWrite = named(s.DenyWrite)
	// Protected whether they exist or not: the config's files, the names
	// in the working directory (the workspace, where the hosts look for
	// them), the home directory's, mcpfsm's own. The names below each
	// writable directory are protected where they exist.
	protect := append([]string(nil), s.Protect...)
	for _, n := range ProtectedNames {
		protect = append(protect, filepath.Join(dir, n))
	}
	if home != "" {
		for _, n := range ProtectedHome {
			protect = append(protect, filepath.Join(home, n))
		}
	}
	if state != "" {
		protect = append(protect, state)
	}
	if cfg, err := os.UserConfigDir(); err == nil {
		protect = append(protect, filepath.Join(cfg, "mcpfsm"))
	}
	always := len(protect)
	budget := protectSearchDirs
	for _, root := range s.AllowWrite {
		protect = append(protect, findProtected(filepath.Clean(root), protectSearchDepth, &budget)...)
	}
	for i, p := range protect {
		p = filepath.Clean(p)
		_, err := os.Lstat(p)
		if err != nil && i >= always {
			continue
		}
		for _, w := range s.AllowWrite {
			if under(p, w) || err == nil && under(w, p) {
				e.DenyWrite = appendNew(e.DenyWrite, Path{Path: p, Added: addedMandatory, Absent: err != nil})
				break
			}
		}
	}
	return e, nil
}

// How far below each writable directory [Spec.Effective] looks for the
// protected names that exist: this many levels, and this many
// directories in all.
const (
	protectSearchDepth = 4
	protectSearchDirs  = 2000
)

// findProtected returns the [ProtectedNames] that exist in dir and in
// the directories below it, depth levels down, listing at most *budget
// directories. It does not follow symbolic links, nor enter .git or
// node_modules.
func findProtected(dir string, depth int, budget *int) []string {
	if *budget <= 0 {
		return nil
	}
	*budget--
	var out []string
	for _, n := range ProtectedNames {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			out = append(out, filepath.Join(dir, n))
		}
	}
	if depth == 0 {
		return out
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() || e.Name() == ".git" || e.Name() == "node_modules" {
			continue
		}
		out = append(out, findProtected(filepath.Join(dir, e.Name()), depth-1, budget)...)
	}
	return out
}

// checkAdded refuses an added path that would widen the sandbox to what
// it must keep: /, the home directory, or a directory that holds
// mcpfsm's state.
func checkAdded(p, home, state string) error {
	what := ""
	switch {
	case p == "/":
		what = "the root directory"
	case home != "" && p == home:
		what = "the home directory"
	case state != "" && under(state, p):
		what = "a directory that holds mcpfsm's state (" + state + ")"
	default:
		return nil
	}
	return fmt.Errorf("sandbox: allowRead would gain %s, %s, which the program needs to run (its working directory, or where it lies): give the server a working directory of its own (\"cwd\", its workspace), or move the program", p, what)
}

// stateDir is mcpfsm's state directory, as package access names it
// ($XDG_STATE_HOME/mcpfsm, or ~/.local/state/mcpfsm); "" when unknown.
func stateDir(home string) string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpfsm")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "mcpfsm")
}

func appendNew(l []Path, p Path) []Path {
	for _, q := range l {
		if q.Path == p.Path {
			return l
		}
	}
	return append(l, p)
}

// Describe says what e allows, one line an aspect, the added paths marked
// as such ("/usr (what running needs)"), for 'mcpfsm check'.
func (e *Effective) Describe() []string {
	show := func(l []Path, none string) string {
		if len(l) == 0 {
			return none
		}
		out := make([]string, 0, len(l))
		for _, p := range l {
			if p.Absent {
				out = append(out, p.Path+" ("+p.Added+", absent: nothing can be created in "+filepath.Dir(p.Path)+")")
			} else if p.Added != "" {
				out = append(out, p.Path+" ("+p.Added+")")
			} else {
				out = append(out, p.Path)
			}
		}
		return strings.Join(out, ", ")
	}
	read := "everything"
	if !e.ReadAll {
		read = "only " + show(e.Read, "nothing")
	}
	if len(e.DenyRead) > 0 {
		read += "; not " + show(e.DenyRead, "")
	}
	write := show(e.Write, "nowhere")
	if len(e.DenyWrite) > 0 && len(e.Write) > 0 {
		write += "; not " + show(e.DenyWrite, "")
	}
	return []string{"read: " + read, "write: " + write}
}

func paths(l []Path) []string {
	out := make([]string, 0, len(l))
	for _, p := range l {
		out = append(out, p.Path)
	}
	return out
}

// under reports whether p is root or lies beneath it.
func under(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// runtimeNeeds are the paths a program needs to read to run, besides
// AllowRead: the system's (systemReads, deviceReads), the working
// directory, and for the program and the interpreter its #! line names
// (with "env", the program it runs), the file as named and as resolved,
// and beside a directory called bin the libraries of its prefix
// (PREFIX/lib, PREFIX/lib64, and a virtualenv's PREFIX/pyvenv.cfg), or
// the node_modules that holds a .bin.
func runtimeNeeds(path, dir string, env []string) []string {
	out := append(append([]string(nil), systemReads...), deviceReads...)
	if dir != "" {
		out = append(out, absIn(dir, ""))
	}
	add := func(prog string) {
		prog = absIn(prog, dir)
		for _, p := range []string{prog, canonical(prog)} {
			out = append(out, p)
			d := filepath.Dir(p)
			switch filepath.Base(d) {
			case "bin":
				prefix := filepath.Dir(d)
				for _, l := range []string{"lib", "lib64", "pyvenv.cfg"} {
					if _, err := os.Stat(filepath.Join(prefix, l)); err == nil {
						out = append(out, filepath.Join(prefix, l))
					}
				}
			case ".bin":
				out = append(out, filepath.Dir(d))
			}
		}
	}
	add(path)
	interp, arg := shebang(absIn(path, dir))
	if interp != "" {
		add(interp)
		if filepath.Base(interp) == "env" && arg != "" {
			if p := lookPath(arg, env); p != "" {
				add(p)
			}
		}
	}
	return out
}

// absIn is p made absolute against dir (the working directory when dir
// is empty).
func absIn(p, dir string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if dir != "" {
		return filepath.Join(dir, p)
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// shebang returns the interpreter a script's #! line names and the first
// argument after it that is not an option ("node" in "#!/usr/bin/env -S node").
func shebang(path string) (interp, arg string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", ""
	}
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return "", ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", ""
	}
	for _, f := range fields[1:] {
		if !strings.HasPrefix(f, "-") {
			return fields[0], f
		}
	}
	return fields[0], ""
}

// lookPath finds name in the PATH of env.
func lookPath(name string, env []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// canonical is p with its symbolic links resolved, as far as it exists:
// Landlock sees the file a path resolves to.
func canonical(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	if dir == "/" || dir == "" {
		return p
	}
	return filepath.Join(canonical(dir), base)
}
