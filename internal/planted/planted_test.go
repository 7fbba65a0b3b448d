package planted

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// module is the module's path: a bugs package is module + "/.../internal/bugs".
const module = "github.com/mcpfsm/mcpfsm"

// TestNoProductionFileReadsABugSwitch walks every package of the module
// and fails for each non-test file that imports a planted-bug package in
// a build without the tag simbugs.
func TestNoProductionFileReadsABugSwitch(t *testing.T) {
	root := filepath.Join("..", "..")
	bad, checked, bugPkgs := scan(t, root)
	for _, b := range bad {
		t.Errorf("%s; plant the bug through a seam in a //go:build simbugs file (see conn/planted.go and conn/planted_off.go)", b)
	}
	// The walk must have seen the whole module, bugs packages included.
	if checked < 200 {
		t.Errorf("checked %d non-test files; want the whole module's (over 200)", checked)
	}
	for _, want := range []string{"conn/internal/bugs", "front/internal/bugs"} {
		if !bugPkgs[want] {
			t.Errorf("the walk found no package %s (found %v)", want, bugPkgs)
		}
	}
}

// TestScanFindsASwitchRead runs the scan on a small module in testdata
// whose production file imports its bugs package, and whose tagged seam
// and test file may.
func TestScanFindsASwitchRead(t *testing.T) {
	bad, checked, _ := scan(t, filepath.Join("testdata", "mod"))
	want := []string{`lib/lib.go imports github.com/mcpfsm/mcpfsm/lib/internal/bugs in a build without the tag simbugs`}
	if len(bad) != len(want) || bad[0] != want[0] {
		t.Errorf("scan of testdata/mod = %q; want %q", bad, want)
	}
	if checked != 4 {
		t.Errorf("checked %d files of testdata/mod; want 4 (lib.go, planted.go, planted_off.go, bugs.go)", checked)
	}
}

// scan walks the Go files under root and returns each non-test file that
// imports a package of the module ending in internal/bugs in a build
// without the tag simbugs, the number of non-test files it read, and the
// bugs packages it saw (paths relative to root).
func scan(t *testing.T, root string) (bad []string, checked int, bugPkgs map[string]bool) {
	t.Helper()
	bugPkgs = map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			n := d.Name()
			if p != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			if path.Base(rel) == "bugs" && path.Base(path.Dir(rel)) == "internal" {
				bugPkgs[rel] = true
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if !isBugs(ip) || path.Dir(rel) == strings.TrimPrefix(ip, module+"/") {
				continue
			}
			if builtWithoutSimbugs(f.Comments, f.Package) {
				bad = append(bad, rel+" imports "+ip+" in a build without the tag simbugs")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad, checked, bugPkgs
}

// isBugs reports whether ip is a planted-bug package of the module.
func isBugs(ip string) bool {
	return strings.HasPrefix(ip, module+"/") && (strings.HasSuffix(ip, "/internal/bugs") || strings.Contains(ip, "/internal/bugs/"))
}

// builtWithoutSimbugs reports whether a file is in some build without the
// tag simbugs: its //go:build line, if any, holds with simbugs off and
// every other tag on.
func builtWithoutSimbugs(groups []*ast.CommentGroup, pkg token.Pos) bool {
	for _, g := range groups {
		if g.Pos() >= pkg {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return true
			}
			return expr.Eval(func(tag string) bool { return tag != "simbugs" })
		}
	}
	return true
}
