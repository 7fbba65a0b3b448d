package fsm

import (
	"slices"
	"strconv"
	"strings"
)

// Mermaid renders the Spec as a Mermaid stateDiagram-v2. Like [Spec.DOT] it
// depends only on the Spec's content: states and transitions are sorted by
// name, and each event between two states is drawn as its own arrow. States
// whose name is not a plain identifier ([A-Za-z0-9_]) get one (for example
// `state "failed-retrying" as failed_retrying`). Docs become state
// descriptions, guarded transitions are labelled "event [when]", terminal
// states get an arrow to [*], alarm states get the class "alarm" and highlighted states (undeclared names are ignored) the
// class "highlight".
//
// A superstate is a composite state (`state live { ... }`) holding its
// children, an arrow from [*] to its Initial child, and the transitions
// between states inside it; its own transitions are drawn once, from the
// composite. A superstate's Doc is not drawn (Mermaid gives composites no
// description). The output ends with a newline.
func (s Spec[S, E, D]) Mermaid(highlight ...S) string {
	return s.MermaidOverlay(Overlay[S]{Highlight: highlight})
}

// MermaidOverlay is [Spec.Mermaid] with an [Overlay]: highlighted
// states, and the taken transitions' counts on their labels (Mermaid
// styles no single transition of a state diagram).
func (s Spec[S, E, D]) MermaidOverlay(o Overlay[S]) string {
	states := s.sortedStates()
	ids := mermaidIDs(states)
	t := s.tree()

	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	if s.Name != "" {
		// A comment rather than a front-matter title, which older renderers reject.
		b.WriteString("    %% " + oneLine(s.Name) + "\n")
	}
	// Each transition is drawn in the innermost composite that holds
	// both its ends, so that Mermaid places no state outside its own.
	byScope := map[S][]edge[S]{}
	for _, e := range s.edges() {
		scope := S("")
		for _, c := range t.chain(e.from)[1:] {
			if t.contains(c, e.to) && c != e.to {
				scope = c
				break
			}
		}
		byScope[scope] = append(byScope[scope], e)
	}
	s.mermaidScope(&b, t, ids, states, byScope, "", s.Initial, "    ", o)

	var alarm, lit []string
	for _, st := range states {
		if st.Alarm {
			alarm = append(alarm, ids[st.Name])
		}
		if slices.Contains(o.Highlight, st.Name) {
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

// mermaidScope writes the states whose Parent is parent (the diagram
// itself for ""), the arrow from [*] to initial, the composites inside,
// the transitions drawn at this level and the terminal arrows.
func (s Spec[S, E, D]) mermaidScope(b *strings.Builder, t tree[S], ids map[S]string, states []State[S], byScope map[S][]edge[S], parent, initial S, indent string, o Overlay[S]) {
	var here []State[S]
	for _, st := range states {
		if st.Parent == parent {
			here = append(here, st)
		}
	}
	for _, st := range here {
		if id := ids[st.Name]; id != string(st.Name) {
			b.WriteString(indent + "state " + `"` + mermaidText(string(st.Name)) + `" as ` + id + "\n")
		}
	}
	for _, st := range here {
		if doc := oneLine(st.Doc); doc != "" && len(t.children[st.Name]) == 0 {
			b.WriteString(indent + ids[st.Name] + " : " + mermaidText(doc) + "\n")
		}
	}
	if initial != "" {
		b.WriteString(indent + "[*] --> " + mermaidID(ids, initial) + "\n")
	}
	for _, st := range here {
		if len(t.children[st.Name]) == 0 {
			continue
		}
		b.WriteString(indent + "state " + ids[st.Name] + " {\n")
		s.mermaidScope(b, t, ids, states, byScope, st.Name, st.Initial, indent+"    ", o)
		b.WriteString(indent + "}\n")
	}
	for _, e := range byScope[parent] {
		b.WriteString(indent + mermaidID(ids, e.from) + " --> " + mermaidID(ids, e.to) + " : " + mermaidText(o.label(e)) + "\n")
	}
	for _, st := range here {
		if st.Terminal {
			b.WriteString(indent + ids[st.Name] + " --> [*]\n")
		}
	}
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
