package console

import (
	"encoding/xml"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm"
)

// svgDoc is the part of the drawing the tests read.
type svgDoc struct {
	Groups []svgGroup `xml:"g"`
}

// svgGroup is one state or arrow of the drawing.
type svgGroup struct {
	Class string `xml:"class,attr"`
	State string `xml:"data-state,attr"`
	From  string `xml:"data-from,attr"`
	To    string `xml:"data-to,attr"`
	Title string `xml:"title"`
	Rects []struct {
		Class string  `xml:"class,attr"`
		X     float64 `xml:"x,attr"`
		Y     float64 `xml:"y,attr"`
		W     float64 `xml:"width,attr"`
		H     float64 `xml:"height,attr"`
	} `xml:"rect"`
	Text string `xml:"text"`
}

func parseDiagram(t *testing.T, svg string) svgDoc {
	t.Helper()
	var d svgDoc
	if err := xml.Unmarshal([]byte(svg), &d); err != nil {
		t.Fatalf("the diagram is not well-formed XML: %v", err)
	}
	return d
}

// The drawing shows exactly the states and transitions of conn.Table():
// every state once, with its alarm and terminal marks, and one arrow per
// (from, to) pair labelled with its events.
func TestDiagramMatchesTable(t *testing.T) {
	spec := conn.Table()
	d := parseDiagram(t, Diagram(spec))
	type node struct {
		Name            string
		Alarm, Terminal bool
	}
	var wantNodes, gotNodes []node
	for _, st := range spec.States {
		wantNodes = append(wantNodes, node{string(st.Name), st.Alarm, st.Terminal})
	}
	wantEdges := map[string][]string{}
	for _, tr := range spec.Transitions {
		for _, f := range tr.From {
			k := string(f) + " -> " + string(tr.To)
			wantEdges[k] = append(wantEdges[k], tr.Label())
		}
	}
	for _, evs := range wantEdges {
		slices.Sort(evs)
	}
	gotEdges := map[string][]string{}
	for _, g := range d.Groups {
		classes := strings.Fields(g.Class)
		switch {
		case slices.Contains(classes, "node"):
			gotNodes = append(gotNodes, node{g.State, slices.Contains(classes, "alarm"), slices.Contains(classes, "terminal")})
		case slices.Contains(classes, "edge"):
			k := g.From + " -> " + g.To
			if _, dup := gotEdges[k]; dup {
				t.Errorf("two arrows %s", k)
			}
			_, label, _ := strings.Cut(g.Title, ": ")
			gotEdges[k] = strings.Split(label, ", ")
		}
	}
	byName := func(a, b node) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(wantNodes, byName)
	slices.SortFunc(gotNodes, byName)
	if diff := cmp.Diff(wantNodes, gotNodes); diff != "" {
		t.Errorf("states (-table +diagram):\n%s", diff)
	}
	if diff := cmp.Diff(wantEdges, gotEdges); diff != "" {
		t.Errorf("arrows (-table +diagram):\n%s", diff)
	}
}

// No two state boxes overlap, and each is wide enough for its name.
func TestDiagramBoxesDoNotOverlap(t *testing.T) {
	type box struct {
		name       string
		x, y, w, h float64
	}
	var boxes []box
	for _, g := range parseDiagram(t, Diagram(conn.Table())).Groups {
		for _, r := range g.Rects {
			if r.Class == "box" {
				boxes = append(boxes, box{g.State, r.X, r.Y, r.W, r.H})
				if r.W < float64(len(g.State))*7 {
					t.Errorf("%s: box %.0f wide for %d characters", g.State, r.W, len(g.State))
				}
			}
		}
	}
	if len(boxes) != len(conn.Table().States) {
		t.Fatalf("%d boxes for %d states", len(boxes), len(conn.Table().States))
	}
	for i, a := range boxes {
		for _, b := range boxes[i+1:] {
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("boxes %s and %s overlap", a.name, b.name)
			}
		}
	}
}

// The layout follows the flow: the initial state is leftmost, every
// forward arrow points right, and names are escaped.
func TestDiagramLayoutAndEscaping(t *testing.T) {
	spec := fsm.Spec[string, string, struct{}]{
		Name: "door <&>", Initial: "closed",
		States: []fsm.State[string]{
			{Name: "closed", Doc: "shut"}, {Name: "open", Doc: "wide <open>"},
			{Name: "broken & gone", Doc: "x", Alarm: true, Terminal: true},
		},
		Events: []fsm.Event[string]{{Name: "open"}, {Name: "close"}, {Name: "kick"}},
		Transitions: []fsm.Transition[string, string, struct{}]{
			{Event: "open", From: []string{"closed"}, To: "open"},
			{Event: "close", From: []string{"open"}, To: "closed"},
			{Event: "kick", From: []string{"closed", "open"}, To: "broken & gone"},
		},
	}
	nodes, edges := layout(spec)
	layer := map[string]int{}
	for _, n := range nodes {
		layer[n.name] = n.layer
	}
	if diff := cmp.Diff(map[string]int{"closed": 0, "open": 1, "broken & gone": 2}, layer); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
	for _, e := range edges {
		if e.back != (e.from.name == "open" && e.to.name == "closed") {
			t.Errorf("%s -> %s: back %v", e.from.name, e.to.name, e.back)
		}
	}
	d := parseDiagram(t, Diagram(spec))
	if !slices.ContainsFunc(d.Groups, func(g svgGroup) bool {
		return g.State == "broken & gone" && g.Text == "broken & gone"
	}) {
		t.Errorf("the escaped state is missing")
	}
}
