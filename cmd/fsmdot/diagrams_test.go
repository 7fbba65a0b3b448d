package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
)

var update = flag.Bool("update", false, "rewrite ../../diagrams and the generated parts of ../../docs/design.md from conn.Table()")

// The committed files this test keeps in step with conn.Table().
var (
	diagramsDir = filepath.Join("..", "..", "diagrams")
	readmePath  = filepath.Join("..", "..", "docs", "design.md") // section 2 shows the machine
)

const (
	mermaidOpen = "```mermaid\n"
	fenceClose  = "```\n"
	statesBegin = "<!-- states:begin"
	statesEnd   = "<!-- states:end -->"
	// The connection machine's block, among the other machines' diagrams.
	connectionBegin = "<!-- connection:begin"
	connectionEnd   = "<!-- connection:end -->"
)

const regenerate = "run go test ./cmd/fsmdot -update (or go generate ./conn for diagrams/ alone)"

// TestCommittedDiagramsFresh fails when diagrams/connection.dot,
// diagrams/connection.mmd, docs/design.md's mermaid block of the
// connection machine or its state table no longer match conn.Table(). With -update it rewrites them (and
// diagrams/connection.svg when Graphviz is installed).
func TestCommittedDiagramsFresh(t *testing.T) {
	if *update {
		if code, _, errOut := fsmdot(t, "-write", diagramsDir); code != exitOK {
			t.Fatalf("-write %s: exit %d: %s", diagramsDir, code, errOut)
		}
		readme, err := os.ReadFile(readmePath)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := regenerateReadme(string(readme))
		if err != nil {
			t.Fatalf("%s: %v", readmePath, err)
		}
		if err := writeIfChanged(readmePath, []byte(fresh)); err != nil {
			t.Fatal(err)
		}
	}

	for _, d := range textDiagrams() {
		path := filepath.Join(diagramsDir, d.name)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v; %s", err, regenerate)
			continue
		}
		if diff := cmp.Diff(d.body, string(got)); diff != "" {
			t.Errorf("%s is stale (-fresh +committed); %s:\n%s", path, regenerate, diff)
		}
	}

	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	mmd, err := mermaidBlock(string(readme))
	if err != nil {
		t.Fatalf("%s: %v", readmePath, err)
	}
	if diff := cmp.Diff(conn.Table().Mermaid(), mmd); diff != "" {
		t.Errorf("%s: the mermaid block differs from diagrams/%s (-fresh +docs/design.md); %s:\n%s", readmePath, mermaidFile, regenerate, diff)
	}
	table, err := between(string(readme), statesBegin, statesEnd)
	if err != nil {
		t.Fatalf("%s: %v", readmePath, err)
	}
	if diff := cmp.Diff(stateTable(), table.body); diff != "" {
		t.Errorf("%s: the state table is stale (-fresh +docs/design.md); %s:\n%s", readmePath, regenerate, diff)
	}
}

// TestEveryCommittedDiagramIsMade: each .dot and .mmd file in diagrams/
// is one -write makes from conn.Machines(), and the connection machine's
// come first, so no machine's diagrams lie there unchecked.
func TestEveryCommittedDiagramIsMade(t *testing.T) {
	var committed, made []string
	for _, ext := range []string{"*.dot", "*.mmd"} {
		files, err := filepath.Glob(filepath.Join(diagramsDir, ext))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			committed = append(committed, filepath.Base(f))
		}
	}
	for _, d := range textDiagrams() {
		made = append(made, d.name)
	}
	if made[0] != dotFile || made[1] != mermaidFile {
		t.Errorf("-write makes %v first, want the connection machine's %s and %s", made[:2], dotFile, mermaidFile)
	}
	slices.Sort(committed)
	slices.Sort(made)
	if diff := cmp.Diff(committed, made); diff != "" {
		t.Errorf("diagrams/ (-committed +made from conn.Machines()):\n%s", diff)
	}
}

// span is a region of a text: body is text[start:end].
type span struct {
	start, end int
	body       string
}

// between returns the lines after the line starting with begin and before
// the line starting with end. Exactly one such region must exist.
func between(text, begin, end string) (span, error) {
	if n := strings.Count(text, begin); n != 1 {
		return span{}, fmt.Errorf("want exactly one line starting %q, found %d", begin, n)
	}
	i := strings.Index(text, begin)
	nl := strings.IndexByte(text[i:], '\n')
	if nl < 0 {
		return span{}, fmt.Errorf("%q is on the last line", begin)
	}
	start := i + nl + 1
	j := strings.Index(text[start:], end)
	if j < 0 || (j > 0 && text[start+j-1] != '\n') {
		return span{}, fmt.Errorf("no line starting %q after %q", end, begin)
	}
	return span{start: start, end: start + j, body: text[start : start+j]}, nil
}

// connectionBlock finds the mermaid code block of the connection
// machine: the one between the connection markers.
func connectionBlock(doc string) (span, error) {
	c, err := between(doc, connectionBegin, connectionEnd)
	if err != nil {
		return span{}, err
	}
	s, err := between(c.body, mermaidOpen, fenceClose)
	if err != nil {
		return span{}, err
	}
	return span{start: c.start + s.start, end: c.start + s.end, body: s.body}, nil
}

// mermaidBlock returns the body of the connection machine's mermaid
// code block.
func mermaidBlock(doc string) (string, error) {
	s, err := connectionBlock(doc)
	return s.body, err
}

// regenerateReadme replaces the connection machine's mermaid block and
// state table.
func regenerateReadme(readme string) (string, error) {
	s, err := connectionBlock(readme)
	if err != nil {
		return "", err
	}
	readme = readme[:s.start] + conn.Table().Mermaid() + readme[s.end:]
	s, err = between(readme, statesBegin, statesEnd)
	if err != nil {
		return "", err
	}
	return readme[:s.start] + stateTable() + readme[s.end:], nil
}

// stateTable renders the states of conn.Table() as a Markdown table, in
// declaration order: name, log phrase and the table's one-line doc.
func stateTable() string {
	cell := strings.NewReplacer("|", `\|`, "\n", " ").Replace
	var b strings.Builder
	b.WriteString("| state | inside | phrase | meaning |\n|---|---|---|---|\n")
	spec := conn.Table()
	for _, st := range spec.States {
		name := "`" + string(st.Name) + "`"
		if st.Terminal {
			name += " (terminal)"
		}
		phrase := cell(st.Name.Phrase())
		if spec.Superstate(st.Name) {
			name += " (superstate)"
			phrase = "—"
		}
		inside := ""
		if st.Parent != "" {
			inside = "`" + string(st.Parent) + "`"
		}
		b.WriteString("| " + name + " | " + inside + " | " + phrase + " | " + cell(st.Doc) + " |\n")
	}
	return b.String()
}
