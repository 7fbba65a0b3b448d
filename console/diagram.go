package console

import (
	"cmp"
	"fmt"
	"html"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// Diagram geometry, in SVG user units (pixels at scale 1).
const (
	charWidth = 7.6   // average advance of a 13px sans-serif glyph, generously
	nodePadX  = 14.0  // horizontal padding inside a state box
	nodeH     = 32.0  // height of a state box
	rowGap    = 22.0  // vertical space between boxes of one column
	colGap    = 130.0 // horizontal space between columns, room for edge labels
	margin    = 12.0
	labelLine = 12.0 // line height of an arrow's label
)

// dnode is one state box of the drawing.
type dnode struct {
	name            string
	doc             string
	alarm, terminal bool
	layer           int
	pos             float64 // barycentric position within the layer
	x, y, w         float64 // top-left corner and width
}

// dedge is one arrow of the drawing: every event between one ordered pair
// of states, like fsm.Spec.DOT draws it.
type dedge struct {
	from, to *dnode
	events   []string
	back     bool // drawn below the boxes, right to left

	d         string  // the SVG path
	lx, ly    float64 // where the label goes
	anchorEnd bool    // the label ends at lx instead of centring on it
	showLabel bool
}

// Diagram renders spec as a standalone SVG image laid out in layers from
// the initial state, left to right, the way Graphviz's dot lays out the
// DOT that fsm.Spec.DOT writes: every state a box (alarm states filled
// red, terminal states with a double border) and every (from, to) pair of
// the table one arrow labelled with its events (a guarded transition as
// "event [when]", as fsm.Spec.DOT writes it). It needs no Graphviz and
// depends only on the table, so the console cannot show another machine
// than the one the supervisors run.
//
// Each state's group carries data-state="NAME" and each arrow's group
// data-from and data-to, so a page can highlight the current state and the
// last transition with CSS classes (see the console's page).
func Diagram[S ~string, E ~string, D any](spec fsm.Spec[S, E, D]) string {
	nodes, edges := layout(spec)
	var b strings.Builder
	width := 0.0
	for _, n := range nodes {
		width = max(width, n.x+n.w+margin)
	}
	height := route(nodes, edges) + margin
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="fsm" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s state machine">`+"\n",
		width, height, width, height, html.EscapeString(spec.Name))
	b.WriteString(`<defs><marker id="fsm-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="8" markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>` +
		`<marker id="fsm-arrow-last" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#0a58ca"/></marker></defs>` + "\n")
	b.WriteString(`<style>` + diagramCSS + `</style>` + "\n")
	for _, e := range edges {
		writeEdge(&b, e)
	}
	for _, n := range nodes {
		writeNode(&b, n)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// diagramCSS styles the drawing; the classes "current" (on a state),
// "last" and "next" (on an arrow) and "focus" (on the svg: label only the
// last arrow and the arrows out of the current state) are set by the page. The colours are those of
// fsm.Spec.DOT: alarm #f8d7da/#b02a37, highlight #cfe2ff/#0a58ca.
const diagramCSS = `.fsm{font-family:Helvetica,Arial,sans-serif}` +
	`.fsm .node rect{fill:#fff;stroke:#333;stroke-width:1}` +
	`.fsm .node.alarm rect{fill:#f8d7da;stroke:#b02a37}` +
	`.fsm .node text{font-size:14px;fill:#000;text-anchor:middle;dominant-baseline:central}` +
	`.fsm .node.current rect.box{stroke:#0a58ca;stroke-width:3.5}` +
	`.fsm .node.current:not(.alarm) rect{fill:#cfe2ff}` +
	`.fsm .node.current text{font-weight:bold}` +
	`.fsm .edge path{fill:none;stroke:#777;stroke-width:1.1;marker-end:url(#fsm-arrow)}` +
	`.fsm .edge text{font-size:12px;fill:#555;text-anchor:middle;paint-order:stroke;stroke:#fff;stroke-width:3px}` +
	`.fsm .edge text.end{text-anchor:end}` +
	`.fsm .edge.last path{stroke:#0a58ca;stroke-width:2.2;marker-end:url(#fsm-arrow-last)}` +
	`.fsm .edge.last text{fill:#0a58ca;font-weight:bold}` +
	`.fsm.focus .edge text{visibility:hidden}` +
	`.fsm.focus .edge.next text,.fsm.focus .edge.last text{visibility:visible}`

func writeNode(b *strings.Builder, n *dnode) {
	class := "node"
	if n.alarm {
		class += " alarm"
	}
	if n.terminal {
		class += " terminal"
	}
	fmt.Fprintf(b, `<g class="%s" data-state="%s"><title>%s</title>`, class, html.EscapeString(n.name), html.EscapeString(n.name+": "+n.doc))
	if n.terminal {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="8"/>`, n.x-3, n.y-3, n.w+6, nodeH+6)
	}
	fmt.Fprintf(b, `<rect class="box" x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6"/>`, n.x, n.y, n.w, nodeH)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text></g>`+"\n", n.x+n.w/2, n.y+nodeH/2, html.EscapeString(n.name))
}

// writeEdge writes an arrow routed by route.
func writeEdge(b *strings.Builder, e *dedge) {
	label := strings.Join(e.events, ", ")
	anchor := ""
	if e.anchorEnd {
		anchor = ` class="end"`
	}
	fmt.Fprintf(b, `<g class="edge" data-from="%s" data-to="%s"><title>%s</title><path d="%s"/><text%s>`,
		html.EscapeString(e.from.name), html.EscapeString(e.to.name),
		html.EscapeString(e.from.name+" → "+e.to.name+": "+label), e.d, anchor)
	if e.showLabel {
		// One line per event, a guard's condition on a line of its own,
		// so a label fits between two columns; the lines end above ly.
		var lines []string
		for _, ev := range e.events {
			name, when, guarded := strings.Cut(ev, " [")
			lines = append(lines, name)
			if guarded {
				lines = append(lines, "["+when)
			}
		}
		y := e.ly - float64(len(lines)-1)*labelLine
		for _, l := range lines {
			fmt.Fprintf(b, `<tspan x="%.1f" y="%.1f">%s</tspan>`, e.lx, y, html.EscapeString(l))
			y += labelLine
		}
	}
	b.WriteString("</text></g>\n")
}

// route computes every arrow's path and label position. A forward arrow
// is a curve from a port on the right side of its source to a port on the
// left side of its target (ports spread so arrows do not start or end in
// one point). A back arrow, one that closes a cycle, leaves the left side
// of its source, runs down the gap left of the source's column into a
// lane of its own below the boxes, left along it, and up into the bottom
// of its target; nested lanes keep back arrows from crossing each other.
// When three or more arrows with one label end in the same state (dispose,
// from every state), the label is written once, at the target.
func route(nodes []*dnode, edges []*dedge) (bottom float64) {
	for _, n := range nodes {
		bottom = max(bottom, n.y+nodeH)
	}
	colLeft := map[int]float64{}
	for _, n := range nodes {
		if l, ok := colLeft[n.layer]; !ok || n.x < l {
			colLeft[n.layer] = n.x
		}
	}
	centre := func(n *dnode) float64 { return n.y + nodeH/2 }
	outs, ins := map[*dnode][]*dedge{}, map[*dnode][]*dedge{}
	var backs []*dedge
	for _, e := range edges {
		if e.back {
			backs = append(backs, e)
			continue
		}
		outs[e.from] = append(outs[e.from], e)
		ins[e.to] = append(ins[e.to], e)
	}
	// Back arrows leave from the left side too, below the incoming ones.
	slices.SortStableFunc(backs, func(a, b *dedge) int {
		return cmp.Or(cmp.Compare(a.from.x-a.to.x, b.from.x-b.to.x), cmp.Compare(a.from.name, b.from.name))
	})
	ports := func(n *dnode, es []*dedge, other func(*dedge) *dnode, extra int) map[*dedge]float64 {
		slices.SortStableFunc(es, func(a, b *dedge) int {
			return cmp.Or(cmp.Compare(centre(other(a)), centre(other(b))), cmp.Compare(other(a).name, other(b).name))
		})
		out := map[*dedge]float64{}
		k := float64(len(es) + extra + 1)
		for i, e := range es {
			out[e] = n.y + nodeH*float64(i+1)/k
		}
		return out
	}
	backOut := map[*dnode]int{}
	for _, e := range backs {
		backOut[e.from]++
	}
	outY, inY := map[*dedge]float64{}, map[*dedge]float64{}
	for _, n := range nodes {
		for e, y := range ports(n, outs[n], func(e *dedge) *dnode { return e.to }, 0) {
			outY[e] = y
		}
		for e, y := range ports(n, ins[n], func(e *dedge) *dnode { return e.from }, backOut[n]) {
			inY[e] = y
		}
	}
	sharedLabel := map[*dedge]bool{}
	for _, n := range nodes {
		groups := map[string][]*dedge{}
		for _, e := range ins[n] {
			k := strings.Join(e.events, ",")
			groups[k] = append(groups[k], e)
		}
		for _, g := range groups {
			if len(g) >= 3 {
				for _, e := range g {
					sharedLabel[e] = true
				}
			}
		}
	}
	for _, e := range edges {
		if e.back {
			continue
		}
		f, t := e.from, e.to
		x1, y1, x2, y2 := f.x+f.w, outY[e], t.x, inY[e]
		dx := (x2 - x1) / 2
		e.d = fmt.Sprintf("M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f", x1, y1, x1+dx, y1, x2-dx, y2, x2, y2)
		e.lx, e.ly, e.showLabel = (x1+x2)/2, (y1+y2)/2-3, true
		if f.layer+1 < t.layer {
			// A long arrow: label it just before its target, where it
			// is alone, ending there so it cannot run into the box.
			e.lx, e.ly, e.anchorEnd = x2-8, y2-4, true
		}
		if sharedLabel[e] {
			e.lx, e.ly = x2-colGap/2+6, t.y-6
			e.showLabel = slices.Index(ins[t], e) == 0
		}
	}
	inBack, backIn := map[*dnode]int{}, map[*dnode]int{}
	for _, e := range backs {
		backIn[e.to]++
	}
	leftBack := map[*dnode]int{}
	for k, e := range backs {
		f, t := e.from, e.to
		n := leftBack[f]
		leftBack[f]++
		x1 := f.x
		y1 := f.y + nodeH*float64(len(ins[f])+n+1)/float64(len(ins[f])+backOut[f]+1)
		gx := colLeft[f.layer] - 14 - float64(k)*8
		lane := bottom + 14 + float64(k)*11
		// Spread over the target's bottom, right to left as the lanes
		// deepen, so a lane never crosses the rise of a shallower one.
		inBack[t]++
		x2 := t.x + t.w - t.w*float64(inBack[t])/float64(backIn[t]+1)
		y2 := t.y + nodeH
		r := 6.0
		e.d = fmt.Sprintf("M%.1f,%.1f L%.1f,%.1f Q%.1f,%.1f %.1f,%.1f L%.1f,%.1f Q%.1f,%.1f %.1f,%.1f L%.1f,%.1f Q%.1f,%.1f %.1f,%.1f L%.1f,%.1f",
			x1, y1, gx+r, y1, gx, y1, gx, y1+r, gx, lane-r, gx, lane, gx-r, lane, x2+r, lane, x2, lane, x2, lane-r, x2, y2)
		e.lx, e.ly, e.showLabel = (gx+x2)/2, lane-3, true
	}
	if len(backs) > 0 {
		bottom += 14 + float64(len(backs)-1)*11
	}
	return bottom
}

// layout assigns every state a layer (longest path from the initial state
// over the forward edges), orders each layer to reduce crossings, and
// places the boxes. Edges that close a cycle become back edges.
func layout[S ~string, E ~string, D any](spec fsm.Spec[S, E, D]) ([]*dnode, []*dedge) {
	byName := map[string]*dnode{}
	var nodes []*dnode
	for _, st := range spec.States {
		n := &dnode{name: string(st.Name), doc: st.Doc, alarm: st.Alarm, terminal: st.Terminal}
		n.w = float64(len(n.name))*charWidth + 2*nodePadX
		byName[n.name] = n
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b *dnode) int { return cmp.Compare(a.name, b.name) })

	type key struct{ from, to string }
	merged := map[key]*dedge{}
	var edges []*dedge
	for _, tr := range spec.Transitions {
		for _, from := range tr.From {
			k := key{string(from), string(tr.To)}
			e := merged[k]
			if e == nil {
				e = &dedge{from: byName[k.from], to: byName[k.to]}
				if e.from == nil || e.to == nil {
					continue // undeclared: fsm.Spec.Validate rejects it
				}
				merged[k] = e
				edges = append(edges, e)
			}
			if !slices.Contains(e.events, tr.Label()) {
				e.events = append(e.events, tr.Label())
			}
		}
	}
	for _, e := range edges {
		slices.Sort(e.events)
	}
	slices.SortFunc(edges, func(a, b *dedge) int {
		return cmp.Or(cmp.Compare(a.from.name, b.from.name), cmp.Compare(a.to.name, b.to.name))
	})

	markBackEdges(nodes, edges, byName[string(spec.Initial)])
	assignLayers(nodes, edges)
	orderLayers(nodes, edges)
	place(nodes)
	return nodes, edges
}

// markBackEdges runs a depth-first search from the initial state (then
// from any state it did not reach) and marks the edges that point to a
// state on the search's stack: removing them leaves an acyclic graph.
func markBackEdges(nodes []*dnode, edges []*dedge, initial *dnode) {
	out := map[*dnode][]*dedge{}
	for _, e := range edges {
		out[e.from] = append(out[e.from], e)
	}
	const (
		white = iota
		grey
		black
	)
	colour := map[*dnode]int{}
	var visit func(n *dnode)
	visit = func(n *dnode) {
		colour[n] = grey
		for _, e := range out[n] {
			switch colour[e.to] {
			case grey:
				e.back = true
			case white:
				visit(e.to)
			}
		}
		colour[n] = black
	}
	if initial != nil {
		visit(initial)
	}
	for _, n := range nodes {
		if colour[n] == white {
			visit(n)
		}
	}
}

// assignLayers puts each state one layer right of its furthest forward
// predecessor.
func assignLayers(nodes []*dnode, edges []*dedge) {
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			if !e.back && e.to.layer < e.from.layer+1 {
				e.to.layer = e.from.layer + 1
				changed = true
			}
		}
	}
}

// orderLayers orders the states of each layer by the mean position of
// their neighbours in other layers, sweeping a few times.
func orderLayers(nodes []*dnode, edges []*dedge) {
	layers := byLayer(nodes)
	for _, l := range layers {
		for i, n := range l {
			n.pos = float64(i) - float64(len(l)-1)/2
		}
	}
	for range 6 {
		for _, l := range layers {
			for _, n := range l {
				sum, cnt := 0.0, 0
				for _, e := range edges {
					if e.back {
						continue
					}
					if e.to == n {
						sum, cnt = sum+e.from.pos, cnt+1
					}
					if e.from == n && e.to.layer == n.layer+1 {
						sum, cnt = sum+e.to.pos, cnt+1
					}
				}
				if cnt > 0 {
					n.pos = sum / float64(cnt)
				}
			}
			slices.SortStableFunc(l, func(a, b *dnode) int { return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.name, b.name)) })
			for i, n := range l {
				n.pos = float64(i) - float64(len(l)-1)/2
			}
		}
	}
}

// place turns layers and positions into coordinates: columns as wide as
// their widest box, each column centred vertically, with room above for
// the two-line labels of the topmost arrows.
func place(nodes []*dnode) {
	layers := byLayer(nodes)
	tallest := 0
	for _, l := range layers {
		tallest = max(tallest, len(l))
	}
	x := margin
	for _, l := range layers {
		colW := 0.0
		for _, n := range l {
			colW = max(colW, n.w)
		}
		top := margin + 2*labelLine + float64(tallest-len(l))*(nodeH+rowGap)/2
		for i, n := range l {
			n.x = x + (colW-n.w)/2
			n.y = top + float64(i)*(nodeH+rowGap)
		}
		x += colW + colGap
	}
}

// byLayer groups the states by layer, each layer sorted by position.
func byLayer(nodes []*dnode) [][]*dnode {
	var layers [][]*dnode
	for _, n := range nodes {
		for len(layers) <= n.layer {
			layers = append(layers, nil)
		}
		layers[n.layer] = append(layers[n.layer], n)
	}
	for _, l := range layers {
		slices.SortStableFunc(l, func(a, b *dnode) int { return cmp.Compare(a.pos, b.pos) })
	}
	return layers
}
