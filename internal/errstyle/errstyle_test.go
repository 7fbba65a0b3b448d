package errstyle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// library lists the packages whose error strings follow the convention,
// each with the packages under it, and the directories that hold the
// module's commands (main packages), whose strings follow it as a
// command's (see checkCommand).
var (
	library  = []string{"conn", "policy", "fsm", "config", "host", "access", "audit", "health", "signin", "authz", "sandbox", "front"}
	commands = []string{"cmd", "internal/conformance/serveclient", "internal/fixture/tasksserver", "internal/testserver"}
)

var (
	// prefixed is a string that starts with a word and a colon or a
	// quoted subject: "conn: ...", "fsm %q: ...".
	prefixed = regexp.MustCompile(`^([a-z][a-z0-9]*)(: | %q)`)
	// serverSubject is a string whose subject is a server named by %q,
	// at its start or after a prefix or a wrapped error.
	serverSubject = regexp.MustCompile(`^(?:[a-z][a-z0-9]*: |%w: )*(mcp )?server %q`)
	// namesServer is a string that names one server by %q anywhere.
	namesServer = regexp.MustCompile(`\bserver %q`)
	// flagOrEnv is a string that starts with a flag as typed (-http) or
	// an environment variable ($MCPFSM_TOKEN, MCP_CONFORMANCE_CONTEXT).
	flagOrEnv = regexp.MustCompile(`^(-[a-z][a-z0-9-]*|\$?[A-Z][A-Z0-9]*_[A-Z0-9_]+)\b`)
	// settingSubject is a string whose subject is one or more flags or
	// environment variables, with a value, and a colon: "-http: ",
	// "-log-level %q: ", "-a, -b and -c: ".
	settingSubject = regexp.MustCompile(`^(?:-[a-z][a-z0-9-]*|\$?[A-Z][A-Z0-9_]*)(?:(?:, | and )(?:-[a-z][a-z0-9-]*|\$?[A-Z][A-Z0-9_]*))*(?: %[qsdv])?: `)
)

// check returns what is wrong with one error string s made in package pkg
// (whose library package is lib), given the names of the module's
// packages; sentinel is set for a package-level errors.New.
func check(s, pkg, lib string, names map[string]bool, sentinel bool) string {
	if m := serverSubject.FindStringSubmatch(s); m != nil && !strings.HasPrefix(s, `mcp server %q: `) {
		return `the subject is a server: start with "mcp server %q: "`
	}
	m := prefixed.FindStringSubmatch(s)
	if m == nil || !names[m[1]] {
		return ""
	}
	if sentinel {
		return "a sentinel error carries no prefix: it is read inside a chain that names its subject"
	}
	if m[1] != pkg && m[1] != lib {
		return "the prefix names package " + m[1] + ", not " + pkg
	}
	return ""
}

// checkCommand returns what is wrong with one error string s of a
// command (a main package under cmd). The command prints its own name
// before an error, so s carries no package prefix; a server it names is
// its subject, written first as in the library; and a flag or
// environment variable that starts it is its subject, followed by its
// value, if any, and a colon.
func checkCommand(s string, names map[string]bool, sentinel bool) string {
	if m := prefixed.FindStringSubmatch(s); m != nil && (names[m[1]] || m[1] == "main") {
		return "a command's error carries no package prefix: the command prints its own name before it"
	}
	if why := check(s, "main", "main", names, sentinel); why != "" {
		return why
	}
	if namesServer.MatchString(s) && !strings.HasPrefix(s, `mcp server %q: `) {
		return `the error names a server: make it the subject, "mcp server %q: " first`
	}
	if flagOrEnv.MatchString(s) && !settingSubject.MatchString(s) {
		return `a flag or environment variable that starts the error is its subject: write it, its value if any, and a colon ("-http: ", "-log-level %q: ")`
	}
	return ""
}

func TestCheckCommand(t *testing.T) {
	names := map[string]bool{"conn": true, "mcpfsm": true, "fsmdot": true}
	for _, tc := range []struct {
		s   string
		bad bool
	}{
		{`-http: %w`, false},
		{`-log-level %q: use debug, info, warn or error`, false},
		{`-a, -b and -c: they need -d URL`, false},
		{`MCP_CONFORMANCE_CONTEXT: toolCalls[%d] has no name`, false},
		{`mcp server %q: no sign-in this host can start`, false},
		{`no running host found in %s: pass -http ADDR or set %s`, false},
		{`tracing: %w`, false},
		{`WWW-Authenticate: %w`, false},
		{`encode %T: %w`, false},
		{`mcpfsm: no host`, true},
		{`conn: tool %q`, true},
		{`main: failed`, true},
		{`server %q has no sign-in`, true},
		{`each caller signs in to server %q as itself`, true},
		{`-max-conns %d is under twice -max-sessions %d`, true},
		{`-oauth-issuer with -listen %q needs -oauth-resource URL`, true},
		{`MCP_CONFORMANCE_CONTEXT is not a JSON object: %w`, true},
	} {
		got := checkCommand(tc.s, names, false)
		if (got != "") != tc.bad {
			t.Errorf("checkCommand(%q) = %q; want a complaint: %v", tc.s, got, tc.bad)
		}
	}
}

func TestCheck(t *testing.T) {
	names := map[string]bool{"conn": true, "host": true, "fsm": true, "signin": true}
	for _, tc := range []struct {
		s, pkg   string
		sentinel bool
		bad      bool
	}{
		{`mcp server %q: close: %w`, "conn", false, false},
		{`conn: no tool named %q is registered`, "conn", false, false},
		{`fsm %q: event %s not fired: %w`, "fsm", false, false},
		{`list tools: %w`, "conn", false, false},
		{`conn.Config.Name %s`, "conn", false, false},
		{`invalid spec`, "fsm", true, false},
		{`conn: tool %q was not published`, "host", false, true},
		{`host: server %q %w: it was stopped`, "host", false, true},
		{`server %q: sign-in failed: %w`, "signin", false, true},
		{`%w: server %q: oauth.callbackPort %d`, "signin", false, true},
		{`conn: closing %q: %w`, "conn", false, false},
		{`fsm: invalid spec`, "fsm", true, true},
	} {
		got := check(tc.s, tc.pkg, tc.pkg, names, tc.sentinel)
		if (got != "") != tc.bad {
			t.Errorf("check(%q in %s, sentinel %v) = %q; want a complaint: %v", tc.s, tc.pkg, tc.sentinel, got, tc.bad)
		}
	}
}

// TestErrorStrings scans the non-test files of the library packages for
// the string of every errors.New and fmt.Errorf and holds it to the
// convention.
func TestErrorStrings(t *testing.T) {
	root := filepath.Join("..", "..")
	names := moduleNames(t, root)
	checked, commandStrings := 0, 0
	for _, lib := range append(library[:len(library):len(library)], commands...) {
		err := filepath.WalkDir(filepath.Join(root, lib), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			sentinels := map[ast.Expr]bool{}
			for _, decl := range f.Decls {
				if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					for _, spec := range gd.Specs {
						for _, v := range spec.(*ast.ValueSpec).Values {
							sentinels[v] = true
						}
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 || !isErrorCall(call) {
					return true
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
				}
				checked++
				why := ""
				if f.Name.Name == "main" {
					commandStrings++
					why = checkCommand(s, names, sentinels[call])
				} else {
					why = check(s, f.Name.Name, lib, names, sentinels[call])
				}
				if why != "" {
					rel, _ := filepath.Rel(root, fset.Position(lit.Pos()).Filename)
					t.Errorf("%s:%d: %q: %s (see conn/errors.go and internal/errstyle/doc.go)", filepath.ToSlash(rel), fset.Position(lit.Pos()).Line, s, why)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 200 {
		t.Fatalf("checked %d error strings; want the library's (over 200)", checked)
	}
	if commandStrings < 30 {
		t.Fatalf("checked %d error strings of the commands; want those of cmd/... and the test commands (over 30)", commandStrings)
	}
}

func isErrorCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf")
}

// moduleNames returns the names of the module's packages: the base names
// of its directories that hold Go files.
func moduleNames(t *testing.T, root string) map[string]bool {
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			names[filepath.Base(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(names, filepath.Base(mustAbs(t, root)))
	var list []string
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	if !names["conn"] || !names["fsm"] {
		t.Fatalf("module packages %v: want conn and fsm among them", list)
	}
	return names
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
	return a
}
