package conn

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoProductionFileReadsABugSwitch: the switches of conn/internal/bugs
// are the simulator's test machinery, so only a file built with the tag
// simbugs alone (planted.go) may import that package; every file of an
// ordinary build of conn and its packages reads none.
func TestNoProductionFileReadsABugSwitch(t *testing.T) {
	const bugsPath = "github.com/mcpfsm/mcpfsm/conn/internal/bugs"
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == filepath.Join("internal", "bugs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != bugsPath {
				continue
			}
			if builtWithoutSimbugs(f.Comments, f.Package) {
				t.Errorf("%s imports %s in a build without the tag simbugs; plant the bug through a seam in a //go:build simbugs file (see planted.go)", path, bugsPath)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d files; want the whole package", checked)
	}
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
