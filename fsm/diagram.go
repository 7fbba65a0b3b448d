package fsm

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Diagram colours, shared by DOT and Mermaid so both drawings of one Spec
// look alike.
const (
	alarmFill     = "#f8d7da"
	alarmStroke   = "#b02a37"
	highlightFill = "#cfe2ff"
	highlightLine = "#0a58ca"
)

// edge is one (from, label, to) triple of the table; the label is the
// event, with its guard's condition when it has one.
type edge[S ~string] struct {
	from, to S
	label    string
}

// sortedStates returns the state declarations sorted by name.
func (s Spec[S, E, D]) sortedStates() []State[S] {
	out := slices.Clone(s.States)
	slices.SortFunc(out, func(a, b State[S]) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// edges returns every (from, event, to) triple sorted by from, to, event and
// deduplicated, so diagrams do not depend on declaration order.
func (s Spec[S, E, D]) edges() []edge[S] {
	var out []edge[S]
	for _, t := range s.Transitions {
		for _, f := range t.From {
			out = append(out, edge[S]{from: f, to: t.To, label: t.Label()})
		}
	}
	slices.SortFunc(out, func(a, b edge[S]) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), cmp.Compare(a.label, b.label))
	})
	return slices.Compact(out)
}

// oneLine folds a Doc onto one line; diagrams have no room for paragraphs.
func oneLine(doc string) string { return strings.Join(strings.Fields(doc), " ") }

// DrawnEdge names one transition as the diagrams draw it: from the state
// it was declared From (a superstate's transition is drawn once, from
// the superstate) to its declared To, under its Label.
type DrawnEdge[S ~string] struct {
	From, To S
	Label    string
}

// Overlay is what a diagram shows beyond the table: states drawn
// highlighted, and how often transitions were taken (a run, a trace),
// shown on their labels ("connected ×3") and, in DOT, drawn bold and blue.
// Names the Spec does not declare are ignored. The zero Overlay draws the
// table alone.
type Overlay[S ~string] struct {
	Highlight []S
	Taken     map[DrawnEdge[S]]int
}

// label returns the edge's label with its count, if it was taken.
func (o Overlay[S]) label(e edge[S]) string {
	if n := o.Taken[DrawnEdge[S]{From: e.from, To: e.to, Label: e.label}]; n > 0 {
		return e.label + " ×" + strconv.Itoa(n)
	}
	return e.label
}

// DOT renders the Spec as a Graphviz digraph. The output depends only on
// the Spec's content (not on declaration order, map order or any machine's
// state): states and edges are sorted by name, and several events between
// the same pair of states share one edge labelled with the events one per
// line; a guarded transition is labelled "event [when]". Each state is
// labelled with its name and Doc; terminal states have a double border,
// alarm states are filled in red, and the highlighted
// states (undeclared names are ignored) are drawn bold and filled in blue.
//
// A superstate is a cluster (subgraph "cluster_NAME", labelled with its
// name and Doc) holding its children and a point node of its own name:
// the superstate's initial pseudo-state, with an arrow to its Initial
// child (invisible when it has none). Its transitions are drawn once,
// from that point, clipped at the cluster's border (compound=true,
// ltail); transitions into it end at the border (lhead). The output ends
// with a newline.
func (s Spec[S, E, D]) DOT(highlight ...S) string {
	return s.DOTOverlay(Overlay[S]{Highlight: highlight})
}

// DOTOverlay is [Spec.DOT] with an [Overlay]: highlighted states, and
// the taken transitions drawn bold and blue with their counts.
func (s Spec[S, E, D]) DOTOverlay(o Overlay[S]) string {
	t := s.tree()
	var b strings.Builder
	b.WriteString("digraph " + dotQuote(s.Name) + " {\n")
	b.WriteString("\trankdir=LR;\n")
	if len(t.parent) > 0 {
		b.WriteString("\tcompound=true;\n")
	}
	b.WriteString("\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\"];\n")

	start := "__start"
	for {
		if _, clash := s.State(S(start)); !clash {
			break
		}
		start += "_"
	}
	b.WriteString("\t" + dotQuote(start) + " [shape=point, width=0.15, label=\"\"];\n")
	b.WriteString("\t" + dotQuote(start) + " -> " + dotQuote(string(s.Initial)) + dotHead(t, s.Initial) + ";\n")

	s.dotScope(&b, t, "", "\t", o)

	edges := s.edges()
	for i := 0; i < len(edges); {
		j, labels, taken := i, []string{}, false
		for ; j < len(edges) && edges[j].from == edges[i].from && edges[j].to == edges[i].to; j++ {
			l := o.label(edges[j])
			taken = taken || l != edges[j].label
			labels = append(labels, dotEscape(l))
		}
		from, to := edges[i].from, edges[i].to
		attrs := `label="` + strings.Join(labels, `\n`) + `"`
		if len(t.children[from]) > 0 && !t.contains(from, to) {
			attrs += `, ltail=` + dotQuote("cluster_"+string(from))
		}
		if len(t.children[to]) > 0 && !t.contains(to, from) {
			attrs += `, lhead=` + dotQuote("cluster_"+string(to))
		}
		if taken {
			attrs += `, color="` + highlightLine + `", fontcolor="` + highlightLine + `", penwidth=3`
		}
		b.WriteString("\t" + dotQuote(string(from)) + " -> " + dotQuote(string(to)) + " [" + attrs + "];\n")
		i = j
	}
	b.WriteString("}\n")
	return b.String()
}

// dotHead returns the attributes of an unlabelled arrow into st: clipped
// at st's border when st is a superstate.
func dotHead[S ~string](t tree[S], st S) string {
	if len(t.children[st]) > 0 {
		return " [lhead=" + dotQuote("cluster_"+string(st)) + "]"
	}
	return ""
}

// dotScope writes the states whose Parent is parent, sorted by name:
// leaves as nodes, superstates as clusters holding their own children.
func (s Spec[S, E, D]) dotScope(b *strings.Builder, t tree[S], parent S, indent string, o Overlay[S]) {
	for _, st := range s.sortedStates() {
		if st.Parent != parent {
			continue
		}
		lit := slices.Contains(o.Highlight, st.Name)
		if len(t.children[st.Name]) == 0 {
			b.WriteString(indent + dotQuote(string(st.Name)) + " [" + strings.Join(dotNodeAttrs(st, lit), ", ") + "];\n")
			continue
		}
		inner := indent + "\t"
		b.WriteString(indent + "subgraph " + dotQuote("cluster_"+string(st.Name)) + " {\n")
		label := dotEscape(string(st.Name))
		if doc := oneLine(st.Doc); doc != "" {
			label += `\n` + dotEscape(doc)
		}
		b.WriteString(inner + `label="` + label + `";` + "\n")
		b.WriteString(inner + "labeljust=l;\n")
		style := "rounded"
		switch {
		case lit:
			style += ",bold"
			b.WriteString(inner + `color="` + highlightLine + `";` + "\n" + inner + "penwidth=3;\n")
		case st.Alarm:
			b.WriteString(inner + `color="` + alarmStroke + `";` + "\n")
		}
		b.WriteString(inner + `style="` + style + `";` + "\n")
		if st.Initial != "" {
			b.WriteString(inner + dotQuote(string(st.Name)) + " [shape=point, width=0.15, label=\"\"];\n")
		} else {
			b.WriteString(inner + dotQuote(string(st.Name)) + " [shape=point, width=0.01, style=invis, label=\"\"];\n")
		}
		s.dotScope(b, t, st.Name, inner, o)
		if st.Initial != "" {
			b.WriteString(inner + dotQuote(string(st.Name)) + " -> " + dotQuote(string(st.Initial)) + dotHead(t, st.Initial) + ";\n")
		}
		b.WriteString(indent + "}\n")
	}
}

// dotNodeAttrs returns the attributes of a leaf's node.
func dotNodeAttrs[S ~string](st State[S], lit bool) []string {
	label := dotEscape(string(st.Name))
	if doc := oneLine(st.Doc); doc != "" {
		label += `\n` + dotEscape(doc)
	}
	attrs := []string{`label="` + label + `"`}
	if st.Terminal {
		attrs = append(attrs, "peripheries=2")
	}
	style := []string{"rounded"}
	switch {
	case st.Alarm:
		style = append(style, "filled")
		attrs = append(attrs, `fillcolor="`+alarmFill+`"`)
		if !lit {
			attrs = append(attrs, `color="`+alarmStroke+`"`)
		}
	case lit:
		style = append(style, "filled")
		attrs = append(attrs, `fillcolor="`+highlightFill+`"`)
	}
	if lit {
		style = append(style, "bold")
		attrs = append(attrs, `color="`+highlightLine+`"`, "penwidth=3")
	}
	if len(style) > 1 {
		attrs = append(attrs, `style="`+strings.Join(style, ",")+`"`)
	}
	return attrs
}

// dotEscape escapes s for use inside a double-quoted DOT string.
func dotEscape(s string) string { return dotEscaper.Replace(s) }

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")

func dotQuote(s string) string { return `"` + dotEscape(s) + `"` }
