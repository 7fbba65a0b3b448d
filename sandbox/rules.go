//go:build linux

package sandbox

import (
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

// fsRules returns the rules that give the rights of e (what Prepare
// made of a Spec). handled is the set of rights the ruleset handles.
// absent are the protected paths that do not exist (the ones that do are
// read-only mounts): each is denied writes like a denyWrite path, so the
// directory that would hold it is split, and nothing can be created
// directly in it, that name included.
func fsRules(e *Effective, handled uint64, absent ...string) ([]fsRule, error) {
	t := &fsTree{readAll: e.ReadAll, handled: handled,
		read:      canonicalAll(paths(e.Read)),
		write:     canonicalAll(append(paths(e.Write), deviceWrites...)),
		denyRead:  canonicalAll(paths(e.DenyRead)),
		denyWrite: append(canonicalAll(paths(named(e.DenyWrite))), canonicalAll(absent)...),
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
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, fs.ErrPermission):
		// A directory mcpfsm cannot list (another user's home): only
		// the way to the paths beneath it is visited, and its other
		// entries get the shared rights alone, which is never more
		// than the Spec gives them.
		return t.visitTowards(p, below, granted)
	case err != nil:
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

// visitTowards visits the entries of p that lead to the paths below it.
func (t *fsTree) visitTowards(p string, below []string, granted uint64) error {
	seen := map[string]bool{}
	for _, q := range below {
		rest := strings.TrimPrefix(strings.TrimPrefix(q, p), "/")
		name, _, _ := strings.Cut(rest, "/")
		next := filepath.Join(p, name)
		if name == "" || seen[next] {
			continue
		}
		seen[next] = true
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		if err := t.visit(next, fi.IsDir(), granted); err != nil {
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

// named are the paths of l that the Spec named; the mandatory ones are
// read-only mounts (see protectMounts), not Landlock rules.
func named(l []Path) []Path {
	var out []Path
	for _, p := range l {
		if p.Added != addedMandatory {
			out = append(out, p)
		}
	}
	return out
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
