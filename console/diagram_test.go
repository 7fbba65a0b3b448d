package console

import (
	"encoding/xml"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/diagrams"
	"github.com/mcpfsm/mcpfsm/fsm"
)

// svgGroup is one node, cluster or arrow of the drawing, at any depth.
type svgGroup struct {
	Class  string     `xml:"class,attr"`
	State  string     `xml:"data-state,attr"`
	Within string     `xml:"data-within,attr"`
	From   string     `xml:"data-from,attr"`
	To     string     `xml:"data-to,attr"`
	Title  string     `xml:"title"`
	Texts  []string   `xml:"text"`
	Groups []svgGroup `xml:"g"`
}

// drawing is what a page's drawing shows: its states with their lines of
// text and marks, its superstates, and its arrows with their labels.
type drawing struct {
	States      map[string][]string // leaf: its lines (name, doc), "alarm" and its superstates
	Superstates map[string][]string // superstate: its lines
	Arrows      map[string][]string // "from -> to": its labels, sorted
}

// read returns what svg draws, or an error for a drawing that is not
// well-formed XML.
func read(svg string) (drawing, error) {
	var root svgGroup
	if err := xml.Unmarshal([]byte(svg), &root); err != nil {
		return drawing{}, err
	}
	d := drawing{States: map[string][]string{}, Superstates: map[string][]string{}, Arrows: map[string][]string{}}
	var walk func(gs []svgGroup)
	walk = func(gs []svgGroup) {
		for _, g := range gs {
			switch {
			case g.Class == "cluster":
				d.Superstates[g.State] = g.Texts
			case strings.HasPrefix(g.Class, "node") && g.State != "":
				d.States[g.State] = append(slices.Clone(g.Texts), "alarm="+fmt.Sprint(strings.Contains(g.Class, "alarm")), "within="+g.Within)
			case g.Class == "edge" && g.From != "":
				labels := slices.Clone(g.Texts)
				slices.Sort(labels)
				d.Arrows[g.From+" -> "+g.To] = labels
			}
			walk(g.Groups)
		}
	}
	walk(root.Groups)
	return d, nil
}

// tableDrawing is what a drawing of spec's DOT must show: every leaf with
// its name and doc, every superstate, every (from, to) pair of the table
// once, labelled with the labels of its transitions.
func tableDrawing[S ~string, E ~string, D any](spec fsm.Spec[S, E, D]) drawing {
	d := drawing{States: map[string][]string{}, Superstates: map[string][]string{}, Arrows: map[string][]string{}}
	for _, st := range spec.States {
		lines := []string{string(st.Name)}
		if doc := strings.Join(strings.Fields(st.Doc), " "); doc != "" {
			lines = append(lines, doc)
		}
		if spec.Superstate(st.Name) {
			d.Superstates[string(st.Name)] = lines
			continue
		}
		var within []string
		for _, p := range spec.Ancestors(st.Name) {
			within = append(within, string(p))
		}
		d.States[string(st.Name)] = append(lines, "alarm="+fmt.Sprint(st.Alarm), "within="+strings.Join(within, " "))
	}
	for _, tr := range spec.Transitions {
		for _, from := range tr.From {
			k := string(from) + " -> " + string(tr.To)
			if !slices.Contains(d.Arrows[k], tr.Label()) {
				d.Arrows[k] = append(d.Arrows[k], tr.Label())
				slices.Sort(d.Arrows[k])
			}
		}
	}
	return d
}

// TestDiagramMatchesTable: the page's drawing shows exactly conn.Table():
// every state with its doc and marks inside its superstates, and every
// transition. diagrams/connection.svg that was not drawn anew after a
// change of the table fails here.
func TestDiagramMatchesTable(t *testing.T) {
	got, err := read(diagramSVG())
	if err != nil {
		t.Fatalf("the diagram is not well-formed XML: %v", err)
	}
	if diff := cmp.Diff(tableDrawing(conn.Table()), got); diff != "" {
		t.Errorf("the drawing (-conn.Table() +diagrams/connection.svg) differs: draw it anew with Graphviz installed: go generate ./conn\n%s", diff)
	}
}

// TestDiagramCheckFails: the same check names a transition the drawing
// lacks and a state whose doc it shows otherwise.
func TestDiagramCheckFails(t *testing.T) {
	spec := conn.Table()
	spec.Transitions = append(spec.Transitions, fsm.Transition[conn.State, conn.Event, conn.Payload]{
		Event: conn.EventProbe, From: []conn.State{conn.Halted}, To: conn.Connecting})
	spec.States[0].Doc = "another doc"
	got, err := read(annotate(spec, diagrams.ConnectionSVG()))
	if err != nil {
		t.Fatal(err)
	}
	diff := cmp.Diff(tableDrawing(spec), got)
	for _, want := range []string{`"halted -> connecting"`, `"probe"`, `"another doc"`} {
		if !strings.Contains(diff, want) {
			t.Errorf("the check of a changed table does not name %s:\n%s", want, diff)
		}
	}
}

// TestDiagramIsInert: the drawing the page inserts runs nothing, loads
// nothing and carries no style but its one <style> (which the console's
// Content-Security-Policy allows by its hash).
func TestDiagramIsInert(t *testing.T) {
	svg := diagramSVG()
	if !strings.HasPrefix(svg, `<svg class="fsm" `) {
		t.Errorf("the drawing starts %.60q, want the <svg> element itself", svg)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)\son[a-z]+=`), regexp.MustCompile(`(?i)\sstyle=`),
		regexp.MustCompile(`(?i)href=`), regexp.MustCompile(`(?i)<foreignObject`), regexp.MustCompile(`<!DOCTYPE|<\?xml`),
	} {
		if bad.MatchString(svg) {
			t.Errorf("the drawing matches %s", bad)
		}
	}
	if n := strings.Count(svg, "<style>"); n != 1 || !strings.Contains(svg, "<style>"+diagramCSS+"</style>") {
		t.Errorf("the drawing has %d <style> elements, want one with diagramCSS", n)
	}
}
