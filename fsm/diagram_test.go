package fsm_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

func TestDiagramGolden(t *testing.T) {
	s := connSpec()
	tests := []struct {
		file string
		got  string
	}{
		{"conn.dot.golden", s.DOT()},
		{"conn_highlight.dot.golden", s.DOT("connected", "failed-retrying")},
		{"conn.mmd.golden", s.Mermaid()},
		{"conn_highlight.mmd.golden", s.Mermaid("connected", "failed-retrying")},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(path, []byte(tt.got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), tt.got); diff != "" {
				t.Errorf("%s mismatch (-golden +got); run go test -update if intended:\n%s", path, diff)
			}
			if !strings.HasSuffix(tt.got, "\n") {
				t.Error("output does not end with a newline")
			}
		})
	}
}

// shuffled returns s with every declaration list (and every From list)
// in a random order.
func shuffled(r *rand.Rand, s fsm.Spec[connState, connEvent, connData]) fsm.Spec[connState, connEvent, connData] {
	r.Shuffle(len(s.States), func(i, j int) { s.States[i], s.States[j] = s.States[j], s.States[i] })
	r.Shuffle(len(s.Events), func(i, j int) { s.Events[i], s.Events[j] = s.Events[j], s.Events[i] })
	r.Shuffle(len(s.Transitions), func(i, j int) { s.Transitions[i], s.Transitions[j] = s.Transitions[j], s.Transitions[i] })
	for _, tr := range s.Transitions {
		r.Shuffle(len(tr.From), func(i, j int) { tr.From[i], tr.From[j] = tr.From[j], tr.From[i] })
	}
	return s
}

func TestDiagramDeterministic(t *testing.T) {
	base := connSpec()
	wantDOT, wantMermaid := base.DOT("connecting"), base.Mermaid("connecting")
	if base.DOT("connecting") != wantDOT || base.Mermaid("connecting") != wantMermaid {
		t.Fatal("rendering the same spec twice gave different bytes")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		s := shuffled(r, connSpec())
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantDOT, s.DOT("connecting")); diff != "" {
			t.Fatalf("shuffle %d: DOT depends on declaration order (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantMermaid, s.Mermaid("connecting")); diff != "" {
			t.Fatalf("shuffle %d: Mermaid depends on declaration order (-want +got):\n%s", i, diff)
		}
	}
}

func TestDiagramDoesNotDependOnMachineState(t *testing.T) {
	m := mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{})
	before := m.Spec().DOT()
	fire(t, m, "dial", "established")
	if m.Spec().DOT() != before {
		t.Error("DOT changed after the machine moved")
	}
}

func TestMermaidIDs(t *testing.T) {
	s := fsm.Spec[string, string, struct{}]{
		Name:    "ids",
		Initial: "a-b",
		States: []fsm.State[string]{
			{Name: "a-b", Doc: `say "hi"; bye: now`}, {Name: "a_b"}, {Name: "a.b", Terminal: true}, {Name: "note"},
		},
		Events: []fsm.Event[string]{{Name: "go"}, {Name: "hop"}},
		Transitions: []fsm.Transition[string, string, struct{}]{
			{Event: "go", From: []string{"a-b"}, To: "a_b"},
			{Event: "go", From: []string{"a_b"}, To: "a.b"},
			{Event: "hop", From: []string{"a-b"}, To: "note"},
		},
	}
	want := `stateDiagram-v2
    %% ids
    state "a-b" as a_b_2
    state "a.b" as a_b_3
    state "note" as note_
    a_b_2 : say #quot;hi#quot;#59; bye#58; now
    [*] --> a_b_2
    a_b_2 --> a_b : go
    a_b_2 --> note_ : hop
    a_b --> a_b_3 : go
    a_b_3 --> [*]
`
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, s.Mermaid("nope")); diff != "" {
		t.Errorf("Mermaid (-want +got):\n%s", diff)
	}
}

func TestDOTEscaping(t *testing.T) {
	s := fsm.Spec[string, string, struct{}]{
		Name:        `q"uote`,
		Initial:     "__start",
		States:      []fsm.State[string]{{Name: "__start", Doc: "back\\slash \"quoted\"\nsecond line"}},
		Events:      []fsm.Event[string]{{Name: "e"}},
		Transitions: []fsm.Transition[string, string, struct{}]{{Event: "e", From: []string{"__start"}, To: "__start"}},
	}
	want := `digraph "q\"uote" {
	rankdir=LR;
	node [shape=box, style=rounded, fontname="Helvetica"];
	edge [fontname="Helvetica"];
	"__start_" [shape=point, width=0.15, label=""];
	"__start_" -> "__start";
	"__start" [label="__start\nback\\slash \"quoted\" second line"];
	"__start" -> "__start" [label="e"];
}
`
	if diff := cmp.Diff(want, s.DOT()); diff != "" {
		t.Errorf("DOT (-want +got):\n%s", diff)
	}
}

func TestDOTMergesParallelEdges(t *testing.T) {
	s := fsm.Spec[string, string, struct{}]{
		Name:    "merge",
		Initial: "up",
		States:  []fsm.State[string]{{Name: "up"}, {Name: "down", Terminal: true}},
		Events:  []fsm.Event[string]{{Name: "crash"}, {Name: "abort"}, {Name: "stop"}},
		Transitions: []fsm.Transition[string, string, struct{}]{
			{Event: "stop", From: []string{"up"}, To: "down"},
			{Event: "crash", From: []string{"up"}, To: "down"},
			{Event: "abort", From: []string{"up"}, To: "down"},
		},
	}
	dot := s.DOT()
	if want := `	"up" -> "down" [label="abort\ncrash\nstop"];` + "\n"; !strings.Contains(dot, want) {
		t.Errorf("DOT lacks merged edge %q:\n%s", want, dot)
	}
	if n := strings.Count(dot, `"up" -> "down"`); n != 1 {
		t.Errorf("DOT has %d up->down edges, want 1", n)
	}
	mmd := s.Mermaid()
	for _, ev := range []string{"abort", "crash", "stop"} {
		if !strings.Contains(mmd, "    up --> down : "+ev+"\n") {
			t.Errorf("Mermaid lacks up --> down : %s:\n%s", ev, mmd)
		}
	}
}
