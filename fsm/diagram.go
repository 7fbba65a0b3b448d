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

// DOT renders the Spec as a Graphviz digraph. The output depends only on
// the Spec's content (not on declaration order, map order or any machine's
// state): states and edges are sorted by name, and several events between
// the same pair of states share one edge labelled with the events one per
// line; a guarded transition is labelled "event [when]". Each state is
// labelled with its name and Doc; terminal states have a double border,
// alarm states are filled in red, and the highlighted
// states (undeclared names are ignored) are drawn bold and filled in blue.
// The output ends with a newline.
func (s Spec[S, E, D]) DOT(highlight ...S) string {
	var b strings.Builder
	b.WriteString("digraph " + dotQuote(s.Name) + " {\n")
	b.WriteString("\trankdir=LR;\n")
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
	b.WriteString("\t" + dotQuote(start) + " -> " + dotQuote(string(s.Initial)) + ";\n")

	for _, st := range s.sortedStates() {
		label := dotEscape(string(st.Name))
		if doc := oneLine(st.Doc); doc != "" {
			label += `\n` + dotEscape(doc)
		}
		attrs := []string{`label="` + label + `"`}
		if st.Terminal {
			attrs = append(attrs, "peripheries=2")
		}
		style := []string{"rounded"}
		lit := slices.Contains(highlight, st.Name)
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
		b.WriteString("\t" + dotQuote(string(st.Name)) + " [" + strings.Join(attrs, ", ") + "];\n")
	}

	edges := s.edges()
	for i := 0; i < len(edges); {
		j, labels := i, []string{}
		for ; j < len(edges) && edges[j].from == edges[i].from && edges[j].to == edges[i].to; j++ {
			labels = append(labels, dotEscape(edges[j].label))
		}
		b.WriteString("\t" + dotQuote(string(edges[i].from)) + " -> " + dotQuote(string(edges[i].to)) +
			` [label="` + strings.Join(labels, `\n`) + "\"];\n")
		i = j
	}
	b.WriteString("}\n")
	return b.String()
}

// dotEscape escapes s for use inside a double-quoted DOT string.
func dotEscape(s string) string { return dotEscaper.Replace(s) }

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")

func dotQuote(s string) string { return `"` + dotEscape(s) + `"` }

// Mermaid renders the Spec as a Mermaid stateDiagram-v2. Like [Spec.DOT] it
// depends only on the Spec's content: states and transitions are sorted by
// name, and each event between two states is drawn as its own arrow. States
// whose name is not a plain identifier ([A-Za-z0-9_]) get one (for example
// `state "failed-retrying" as failed_retrying`). Docs become state
// descriptions, guarded transitions are labelled "event [when]", terminal
// states get an arrow to [*], alarm states get the class "alarm" and highlighted states (undeclared names are ignored) the
// class "highlight". The output ends with a newline.
func (s Spec[S, E, D]) Mermaid(highlight ...S) string {
	states := s.sortedStates()
	ids := mermaidIDs(states)

	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	if s.Name != "" {
		// A comment rather than a front-matter title, which older renderers reject.
		b.WriteString("    %% " + oneLine(s.Name) + "\n")
	}
	for _, st := range states {
		if id := ids[st.Name]; id != string(st.Name) {
			b.WriteString("    state " + `"` + mermaidText(string(st.Name)) + `" as ` + id + "\n")
		}
	}
	for _, st := range states {
		if doc := oneLine(st.Doc); doc != "" {
			b.WriteString("    " + ids[st.Name] + " : " + mermaidText(doc) + "\n")
		}
	}
	b.WriteString("    [*] --> " + mermaidID(ids, s.Initial) + "\n")
	for _, e := range s.edges() {
		b.WriteString("    " + mermaidID(ids, e.from) + " --> " + mermaidID(ids, e.to) + " : " + mermaidText(e.label) + "\n")
	}
	for _, st := range states {
		if st.Terminal {
			b.WriteString("    " + ids[st.Name] + " --> [*]\n")
		}
	}

	var alarm, lit []string
	for _, st := range states {
		if st.Alarm {
			alarm = append(alarm, ids[st.Name])
		}
		if slices.Contains(highlight, st.Name) {
			lit = append(lit, ids[st.Name])
		}
	}
	if len(alarm) > 0 {
		b.WriteString("    classDef alarm fill:" + alarmFill + ",stroke:" + alarmStroke + ",color:#000\n")
	}
	if len(lit) > 0 {
		b.WriteString("    classDef highlight fill:" + highlightFill + ",stroke:" + highlightLine + ",stroke-width:3px,font-weight:bold\n")
	}
	if len(alarm) > 0 {
		b.WriteString("    class " + strings.Join(alarm, ",") + " alarm\n")
	}
	if len(lit) > 0 {
		b.WriteString("    class " + strings.Join(lit, ",") + " highlight\n")
	}
	return b.String()
}

// mermaidIDs assigns every state a Mermaid identifier: its name when that
// is already one, otherwise the name with other characters replaced by '_',
// suffixed to stay unique. states must be sorted, so the choice is stable.
func mermaidIDs[S ~string](states []State[S]) map[S]string {
	ids := make(map[S]string, len(states))
	taken := make(map[string]bool, len(states))
	for _, st := range states {
		if plainID(string(st.Name)) && !mermaidKeyword(string(st.Name)) {
			ids[st.Name] = string(st.Name)
			taken[string(st.Name)] = true
		}
	}
	for _, st := range states {
		if _, ok := ids[st.Name]; ok {
			continue
		}
		base := strings.Map(func(r rune) rune {
			if r < 0x80 && plainID(string(r)) {
				return r
			}
			return '_'
		}, string(st.Name))
		if mermaidKeyword(base) {
			base += "_"
		}
		id := base
		for n := 2; taken[id]; n++ {
			id = base + "_" + strconv.Itoa(n)
		}
		ids[st.Name], taken[id] = id, true
	}
	return ids
}

// mermaidID returns the identifier of a state, falling back to the name
// itself for an undeclared one (only an invalid Spec has those).
func mermaidID[S ~string](ids map[S]string, name S) string {
	if id, ok := ids[name]; ok {
		return id
	}
	return string(name)
}

func plainID(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// mermaidKeyword reports whether Mermaid's (case-insensitive) lexer would
// read s as a keyword rather than a state id.
func mermaidKeyword(s string) bool {
	switch strings.ToLower(s) {
	case "state", "note", "class", "classdef", "style", "direction", "end", "hide", "scale",
		"as", "default", "click", "statediagram", "accdescr", "acctitle":
		return true
	}
	return false
}

// mermaidText makes s safe as a Mermaid label: a quote would end a state
// name, and Mermaid's lexer stops a description at ':' or ';', so these
// become entity codes, which Mermaid decodes when rendering.
func mermaidText(s string) string {
	return mermaidEscaper.Replace(oneLine(s))
}

var mermaidEscaper = strings.NewReplacer(`"`, "#quot;", ";", "#59;", ":", "#58;")
