package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mcpfsm/mcpfsm/conn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fsmdot runs the command in-process and returns its exit status and output.
func fsmdot(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun fails the test unless the command exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := fsmdot(t, args...)
	if code != 0 {
		t.Fatalf("fsmdot %s: exit %d, stderr:\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func TestFsmdotDefaultPrintsDigraph(t *testing.T) {
	out := mustRun(t)
	if !strings.HasPrefix(out, `digraph "connection" {`) {
		t.Errorf("output does not start with the digraph header:\n%s", out)
	}
	for _, st := range conn.Table().Leaves() {
		if !strings.Contains(out, "\t\""+string(st)+"\" [label=") {
			t.Errorf("output does not declare state %q", st)
		}
	}
	if diff := cmp.Diff(conn.Table().DOT(), out); diff != "" {
		t.Errorf("output differs from conn.Table().DOT() (-want +got):\n%s", diff)
	}
}

func TestFsmdotMermaid(t *testing.T) {
	out := mustRun(t, "-format", "mermaid")
	if !strings.HasPrefix(out, "stateDiagram-v2\n") {
		t.Errorf("output does not start with stateDiagram-v2:\n%s", out)
	}
	if diff := cmp.Diff(conn.Table().Mermaid(), out); diff != "" {
		t.Errorf("output differs from conn.Table().Mermaid() (-want +got):\n%s", diff)
	}
}

func TestFsmdotOutputFile(t *testing.T) {
	for _, format := range []string{"dot", "mermaid"} {
		t.Run(format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out."+format)
			if out := mustRun(t, "-format", format, "-o", path); out != "" {
				t.Errorf("stdout = %q, want nothing when -o is given", out)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := mustRun(t, "-format", format)
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("-o file differs from stdout output (-stdout +file):\n%s", diff)
			}
		})
	}
}

func TestFsmdotOutputFileUnwritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "out.dot")
	code, _, errOut := fsmdot(t, "-o", path)
	if code != exitFail || !strings.Contains(errOut, path) {
		t.Errorf("exit %d, stderr %q; want exit %d naming %s", code, errOut, exitFail, path)
	}
}

func TestFsmdotHighlight(t *testing.T) {
	spec := conn.Table()
	if diff := cmp.Diff(spec.DOT(conn.Established), mustRun(t, "-highlight", "established")); diff != "" {
		t.Errorf("-highlight established (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(spec.Mermaid(conn.LostReconnecting), mustRun(t, "-format", "mermaid", "-highlight", "lost-reconnecting")); diff != "" {
		t.Errorf("-format mermaid -highlight lost-reconnecting (-want +got):\n%s", diff)
	}
	if mustRun(t, "-highlight", "established") == mustRun(t) {
		t.Error("-highlight did not change the output")
	}

	code, out, errOut := fsmdot(t, "-highlight", "connected")
	if code != exitUsage || out != "" {
		t.Errorf("unknown state: exit %d, stdout %q; want exit %d and no output", code, out, exitUsage)
	}
	for _, want := range append([]string{`unknown state "connected"`}, stateNames()...) {
		if !strings.Contains(errOut, want) {
			t.Errorf("unknown state: stderr does not mention %q:\n%s", want, errOut)
		}
	}
}

func TestFsmdotUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"-format", "png"}, `unknown -format "png"; valid formats: dot, mermaid, svg`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-check", "a", "-write", "b"}, "-check and -write cannot be combined"},
		{[]string{"-write", "a", "-format", "mermaid"}, "-format cannot be combined"},
		{[]string{"-check", "a", "-highlight", "established"}, "-highlight cannot be combined"},
		{[]string{"-check", ""}, "-check needs a directory"},
		{[]string{"-write", ""}, "-write needs a directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := fsmdot(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr does not contain %q:\n%s", tt.want, errOut)
			}
		})
	}
}

func TestFsmdotHelp(t *testing.T) {
	code, out, errOut := fsmdot(t, "-h")
	if code != exitOK || out != "" {
		t.Fatalf("-h: exit %d, stdout %q; want exit 0, usage on stderr", code, out)
	}
	for _, want := range []string{
		"-format", "-o FILE", "-highlight STATE", "-check DIR", "-write DIR",
		"dot", "mermaid", "svg", "apt-get install graphviz", "brew install graphviz",
		"go generate", "Examples:", "go run ./cmd/fsmdot -check diagrams",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("-h does not mention %q", want)
		}
	}
}

func TestFsmdotCheck(t *testing.T) {
	emptyPath(t) // -write and -check must work without Graphviz
	dir := t.TempDir()
	code, _, errOut := fsmdot(t, "-write", dir)
	if code != exitOK {
		t.Fatalf("-write: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "skipped") || !strings.Contains(errOut, "apt-get install graphviz") {
		t.Errorf("-write without Graphviz does not say it skipped the svg:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, svgFile)); err == nil {
		t.Error("-write without Graphviz wrote an svg")
	}
	if code, _, errOut := fsmdot(t, "-check", dir); code != exitOK {
		t.Fatalf("-check on fresh output: exit %d: %s", code, errOut)
	}

	mmd := filepath.Join(dir, mermaidFile)
	if err := os.WriteFile(mmd, []byte("stateDiagram-v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = fsmdot(t, "-check", dir)
	if code != exitFail {
		t.Errorf("-check with a modified %s: exit %d, want %d", mermaidFile, code, exitFail)
	}
	if !strings.Contains(errOut, mmd+" is stale") {
		t.Errorf("-check does not name the stale file %s:\n%s", mmd, errOut)
	}
	if dot := filepath.Join(dir, dotFile); strings.Contains(errOut, dot) {
		t.Errorf("-check names the fresh file %s:\n%s", dot, errOut)
	}
	if !strings.Contains(errOut, "go generate") {
		t.Errorf("-check does not say how to regenerate:\n%s", errOut)
	}

	if err := os.Remove(filepath.Join(dir, dotFile)); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = fsmdot(t, "-check", dir)
	if code != exitFail || !strings.Contains(errOut, filepath.Join(dir, dotFile)+" is missing") || !strings.Contains(errOut, mmd+" is stale") {
		t.Errorf("-check with a missing and a stale file: exit %d, stderr:\n%s", code, errOut)
	}

	// Writing again repairs both.
	mustRun(t, "-write", dir)
	mustRun(t, "-check", dir)
}

func TestFsmdotSVGWithoutDot(t *testing.T) {
	emptyPath(t)
	code, out, errOut := fsmdot(t, "-format", "svg")
	if code != exitFail || out != "" {
		t.Errorf("exit %d, stdout %q; want exit %d and no output", code, out, exitFail)
	}
	for _, want := range []string{"not found on PATH", "apt-get install graphviz", "brew install graphviz"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, errOut)
		}
	}
}

func TestFsmdotSVGWithDot(t *testing.T) {
	requireDot(t)
	out := mustRun(t, "-format", "svg", "-highlight", "established")
	if !strings.Contains(out, "<svg") || !strings.HasSuffix(strings.TrimSpace(out), "</svg>") {
		t.Fatalf("output is not an svg document:\n%.300s", out)
	}
	spec := conn.Table()
	for _, st := range spec.States {
		// Graphviz writes '-' in titles as the entity &#45;; a superstate
		// is a cluster.
		name := strings.ReplaceAll(string(st.Name), "-", "&#45;")
		if spec.Superstate(st.Name) {
			name = "cluster_" + name
		}
		if !strings.Contains(out, "<title>"+name+"</title>") {
			t.Errorf("svg has no node or cluster for state %q", st.Name)
		}
	}

	dir := t.TempDir()
	code, _, errOut := fsmdot(t, "-write", dir)
	if code != exitOK || errOut != "" {
		t.Fatalf("-write with Graphviz: exit %d, stderr %q", code, errOut)
	}
	svg, err := os.ReadFile(filepath.Join(dir, svgFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("%s is not an svg document", svgFile)
	}
}

// emptyPath points PATH at an empty directory, so Graphviz cannot be found.
func emptyPath(t *testing.T) {
	t.Helper()
	t.Setenv("PATH", t.TempDir())
	if _, err := exec.LookPath("dot"); err == nil {
		t.Fatal("dot is still found with an empty PATH")
	}
}

// requireDot skips the test when Graphviz is not installed, or fails it
// when MCPFSM_REQUIRE_GRAPHVIZ is set (as in CI).
func requireDot(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("dot"); err != nil {
		const fix = "Graphviz 'dot' is not on PATH; install it (apt-get install graphviz or brew install graphviz) to test svg rendering"
		if os.Getenv("MCPFSM_REQUIRE_GRAPHVIZ") != "" {
			t.Fatal(fix + " (MCPFSM_REQUIRE_GRAPHVIZ is set)")
		}
		t.Skip(fix)
	}
}
