//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Landlock access rights, as the hosts' model groups them.
const (
	readRights  uint64 = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	writeRights uint64 = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// fileRights are the rights that apply to a file (not a directory).
	fileRights uint64 = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// What running needs, besides the program's own files, when AllowRead
// limits reads: the system's executables, libraries and configuration, and
// a few devices. The devices that swallow or give nothing can be written.
var (
	systemReads  = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix/store"}
	deviceReads  = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	deviceWrites = []string{"/dev/null", "/dev/zero", "/dev/full"}
)

// fsRule grants Access (Landlock rights) beneath Path.
type fsRule struct {
	Path   string
	Access uint64
}

// fsTree answers which rights every path gets under a Spec, and turns
// that into Landlock rules. Landlock only grants, and a right granted on
// a directory holds for everything beneath it; so a directory that holds
// a path with other rights (a denyRead inside a readable tree) is split:
// it gets the rights its whole tree shares, and each of its entries is
// visited in turn. Entries created in a split directory after the rules
// were made get only the shared rights (so nothing can be created or
// removed directly in a directory that holds a denyWrite path). One right
// is not split: a readable directory stays listable, the names in a denied
// one included.
type fsTree struct {
	readAll                          bool
	read, write, denyRead, denyWrite []string // canonical
	handled                          uint64   // what the kernel's Landlock handles
	rules                            []fsRule
}

// fsRules returns the rules that give the rights of spec; needs are what
// running needs (read), only read when spec.AllowRead is set. handled is
// the set of rights the ruleset handles.
func fsRules(spec *Spec, needs []string, handled uint64) ([]fsRule, error) {
	t := &fsTree{readAll: spec.AllowRead == nil, handled: handled,
		read:      canonicalAll(append(append([]string(nil), spec.AllowRead...), needs...)),
		write:     canonicalAll(append(append([]string(nil), spec.AllowWrite...), deviceWrites...)),
		denyRead:  canonicalAll(spec.DenyRead),
		denyWrite: canonicalAll(spec.DenyWrite),
	}
	if t.readAll {
		t.read = nil
	}
	if err := t.visit("/", true, 0); err != nil {
		return nil, err
	}
	return t.rules, nil
}

// rights are what path p may do.
func (t *fsTree) rights(p string) uint64 {
	var a uint64
	writable := underAny(p, t.write)
	if (t.readAll || writable || underAny(p, t.read)) && !underAny(p, t.denyRead) {
		a |= readRights
	}
	if writable && !underAny(p, t.denyWrite) {
		a |= writeRights
	}
	return a
}

// below returns the paths of t that lie strictly beneath p.
func (t *fsTree) below(p string) []string {
	var out []string
	for _, l := range [][]string{t.read, t.write, t.denyRead, t.denyWrite} {
		for _, q := range l {
			if q != p && under(q, p) {
				out = append(out, q)
			}
		}
	}
	return out
}

// visit emits the rules for p and beneath it; granted is what the rules
// on p's ancestors grant it already.
func (t *fsTree) visit(p string, dir bool, granted uint64) error {
	want := t.rights(p)
	below := t.below(p)
	if len(below) == 0 || !dir {
		t.emit(p, dir, want&^granted)
		return nil
	}
	common := want
	for _, q := range below {
		common &= t.rights(q)
	}
	// A readable directory stays listable even when it holds a denyRead
	// path, so that the names beneath it can be listed (not read).
	common |= want & ll.AccessFSReadDir
	t.emit(p, dir, common&^granted)
	granted |= common
	entries, err := os.ReadDir(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("sandbox: cannot list %s, which holds %s: %w", p, below[0], err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue // Landlock checks the file a link resolves to, wherever it is
		}
		if err := t.visit(filepath.Join(p, e.Name()), e.IsDir(), granted); err != nil {
			return err
		}
	}
	return nil
}

func (t *fsTree) emit(p string, dir bool, a uint64) {
	a &= t.handled
	if !dir {
		a &= fileRights
	}
	if a != 0 {
		t.rules = append(t.rules, fsRule{Path: p, Access: a})
	}
}

// under reports whether p is root or lies beneath it.
func under(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if under(p, r) {
			return true
		}
	}
	return false
}

func canonicalAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, canonical(p))
	}
	return out
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

// runtimeNeeds are the paths a program needs to read to run, besides
// AllowRead: the system's (systemReads, deviceReads), the working
// directory, and for the program and the interpreter its #! line names
// (with "env", the program it runs), the directory of each as named and
// as resolved, and the parent of such a directory called bin (where a
// runtime keeps its libraries, as node's prefix or a virtualenv).
func runtimeNeeds(path, dir string, env []string) []string {
	out := append(append([]string(nil), systemReads...), deviceReads...)
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if dir != "" {
		out = append(out, absIn(dir, ""))
	}
	add := func(prog string) {
		prog = absIn(prog, dir)
		for _, p := range []string{prog, canonical(prog)} {
			d := filepath.Dir(p)
			out = append(out, d)
			if b := filepath.Base(d); b == "bin" || b == ".bin" {
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
