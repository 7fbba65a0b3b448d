//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// covered is what the rules grant p: the union of the rules on p and its
// ancestors, as Landlock computes it.
func covered(rules []fsRule, p string) uint64 {
	var a uint64
	for _, r := range rules {
		if under(p, r.Path) {
			a |= r.Access
		}
	}
	return a
}

// TestRulesGiveEachPathItsRights checks, for every path of a small tree,
// that the rules grant exactly the rights the Spec gives it (less the
// listing a split directory keeps, and what only directories can use).
func TestRulesGiveEachPathItsRights(t *testing.T) {
	root := canonical(t.TempDir())
	for _, d := range []string{"a/b", "a/c", "w/ro", "w/rw", "w/x/deep"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{"a/key", "a/b/f", "a/c/f", "w/ro/f", "w/rw/f", "w/f", "w/x/deep/f", "top"} {
		os.WriteFile(filepath.Join(root, f), nil, 0o644)
	}
	j := func(p string) string { return filepath.Join(root, p) }
	const all = readRights | writeRights
	for _, spec := range []Spec{
		{DenyRead: []string{j("a/key"), j("a/c")}, AllowWrite: []string{j("w")}, DenyWrite: []string{j("w/ro"), j("w/x/deep/f")}},
		{AllowRead: []string{j("a")}, DenyRead: []string{j("a/key")}, AllowWrite: []string{j("w")}, DenyWrite: []string{j("w/ro")}},
		{AllowRead: []string{}, AllowWrite: []string{j("w/rw")}},
	} {
		e := &Effective{ReadAll: spec.AllowRead == nil}
		for _, l := range []struct {
			dst *[]Path
			src []string
		}{{&e.Read, spec.AllowRead}, {&e.DenyRead, spec.DenyRead}, {&e.Write, spec.AllowWrite}, {&e.DenyWrite, spec.DenyWrite}} {
			for _, p := range l.src {
				*l.dst = append(*l.dst, Path{Path: p})
			}
		}
		rules, err := fsRules(e, all)
		if err != nil {
			t.Fatal(err)
		}
		tree := &fsTree{readAll: spec.AllowRead == nil, read: canonicalAll(spec.AllowRead), write: canonicalAll(append(spec.AllowWrite, deviceWrites...)),
			denyRead: canonicalAll(spec.DenyRead), denyWrite: canonicalAll(spec.DenyWrite)}
		if tree.readAll {
			tree.read = nil
		}
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			want, got := tree.rights(p), covered(rules, p)
			mask := all
			if !fi.IsDir() {
				mask = fileRights
			}
			if fi.IsDir() {
				// A split directory keeps what its whole tree shares.
				for _, q := range tree.below(p) {
					want &= tree.rights(q)
				}
			}
			const list = uint64(1 << 3) // ReadDir: kept wherever an ancestor was readable
			if got&^list&mask != want&^list&mask || want&list != 0 && got&list == 0 {
				t.Errorf("spec %+v: %s gets %b, want %b", spec, p, got&mask, want&mask)
			}
			return nil
		})
	}
}
