package console

import (
	"html"
	"regexp"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/diagrams"
	"github.com/mcpfsm/mcpfsm/fsm"
)

// diagramCSS styles the drawing over the attributes Graphviz gave it; the
// classes "current" (on a state), "last" and "next" (on an arrow) and
// "focus" (on the svg: label only the last arrow and the arrows out of the
// current state) are set by the page. The colours are those of
// fsm.Spec.DOT: alarm #f8d7da/#b02a37, highlight #cfe2ff/#0a58ca. Only
// the current state is coloured: the others are drawn plain, so a healthy
// server's drawing shows no alarm colour.
const diagramCSS = `.fsm text{font-family:Helvetica,Arial,sans-serif}` +
	`.fsm .node path{fill:#fff;stroke:#888}` +
	`.fsm .node text{fill:#333}` +
	`.fsm .node.current path{stroke:#0a58ca;stroke-width:3.5}` +
	`.fsm .node.current:not(.alarm) path{fill:#cfe2ff}` +
	`.fsm .node.current.alarm path{fill:#f8d7da;stroke:#b02a37}` +
	`.fsm .node.current text{font-weight:bold}` +
	`.fsm .cluster path{stroke:#888}` +
	`.fsm .edge path{stroke:#777}` +
	`.fsm .edge polygon{fill:#777;stroke:#777}` +
	`.fsm .edge text{fill:#555}` +
	`.fsm .edge.last path{stroke:#0a58ca;stroke-width:2.5}` +
	`.fsm .edge.last polygon{fill:#0a58ca;stroke:#0a58ca}` +
	`.fsm .edge.last text{fill:#0a58ca;font-weight:bold}` +
	`.fsm.focus .edge text{visibility:hidden}` +
	`.fsm.focus .edge.next text,.fsm.focus .edge.last text{visibility:visible}`

// drawnGroup is the opening of a node, cluster or arrow in Graphviz's SVG,
// with the title that names it.
var drawnGroup = regexp.MustCompile(`<g id="(?:node|clust|edge)\d+" class="(node|cluster|edge)">\n<title>([^<]*)</title>`)

// diagramSVG returns the connection machine as the page shows it: the
// drawing of diagrams/connection.svg, which Graphviz made from the DOT
// that fsm writes for conn.Table(), so the page shows the machine as the
// docs do, superstates as clusters. Each state's node and each
// superstate's cluster gets data-state="NAME" (a state's node also
// data-within, its superstates innermost first, and the class "alarm"
// for an alarm state), and each arrow data-from and data-to as declared,
// so the page can highlight the current state, the arrows that leave it
// and the last transition. diagram_test.go holds the drawing against the
// table, so a drawing left behind by a change of the table fails the
// tests.
func diagramSVG() string {
	return annotate(conn.Table(), diagrams.ConnectionSVG())
}

// annotate returns svg, a Graphviz drawing of spec's DOT, without its
// XML prologue, as an inline <svg> of class "fsm" with diagramCSS and the
// data attributes of [diagramSVG].
func annotate[S ~string, E ~string, D any](spec fsm.Spec[S, E, D], svg string) string {
	if i := strings.Index(svg, "<svg"); i >= 0 {
		svg = svg[i:]
	}
	svg = strings.Replace(svg, "<svg ", `<svg class="fsm" role="img" aria-label="`+html.EscapeString(spec.Name)+` state machine" `, 1)
	if i := strings.Index(svg, ">"); i >= 0 {
		svg = svg[:i+1] + "\n<style>" + diagramCSS + "</style>" + svg[i+1:]
	}
	return drawnGroup.ReplaceAllStringFunc(svg, func(g string) string {
		m := drawnGroup.FindStringSubmatch(g)
		class, title := m[1], html.UnescapeString(m[2])
		var attrs []string
		switch class {
		case "node":
			st, ok := spec.State(S(title))
			if !ok || spec.Superstate(st.Name) {
				return g // the initial points: the machine's and each superstate's
			}
			if st.Alarm {
				class += " alarm"
			}
			var within []string
			for _, p := range spec.Ancestors(st.Name) {
				within = append(within, string(p))
			}
			attrs = append(attrs, "data-state", title, "data-within", strings.Join(within, " "))
		case "cluster":
			attrs = append(attrs, "data-state", strings.TrimPrefix(title, "cluster_"))
		case "edge":
			from, to, ok := strings.Cut(title, "->")
			if _, declared := spec.State(S(from)); !ok || !declared {
				return g // the arrow from the machine's initial point
			}
			attrs = append(attrs, "data-from", from, "data-to", to)
		}
		var b strings.Builder
		b.WriteString(`<g class="` + class + `"`)
		for i := 0; i < len(attrs); i += 2 {
			b.WriteString(" " + attrs[i] + `="` + html.EscapeString(attrs[i+1]) + `"`)
		}
		b.WriteString(">\n<title>" + m[2] + "</title>")
		return b.String()
	})
}
