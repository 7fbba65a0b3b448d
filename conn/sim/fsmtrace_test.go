package sim

import (
	"fmt"
	"io"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
)

// traceServer names supervisor inc in a trace: fsmdot -trace -server
// draws one incarnation's path.
func traceServer(inc int) string { return fmt.Sprintf("sim-%d", inc) }

// traceStep is the one adapter between the simulator and package
// fsm/trace: a transition of supervisor inc as a trace line, as conn
// writes it, with the machine named by the incarnation.
func traceStep(m Move) trace.Step {
	s := m.TraceStep()
	s.Machine = traceServer(m.Inc)
	return s
}

// table is the connection machine's declaration, which every trace must
// follow, and edges its flattened edges, by (from, event, guard, to).
var (
	table = conn.Table()
	edges = func() map[[4]string]bool {
		out := map[[4]string]bool{}
		for _, e := range table.Flatten() {
			out[[4]string{string(e.From), string(e.Event), e.When, string(e.To)}] = true
		}
		return out
	}()
)

// checkTrace checks the transitions of h not yet checked: each is an edge
// of conn.Table(), with its guard, continuing from the one before of its
// supervisor (the first from the initial state). At the end of the run
// (h.Final) the whole trace goes through fsm/trace's Check, as fsmdot
// -trace reads it.
func (h *History) checkTrace() error {
	if h.traceLast == nil {
		h.traceLast = map[int]conn.State{}
	}
	for _, m := range h.Transitions[h.traceChecked:] {
		last, ok := h.traceLast[m.Inc]
		switch {
		case !ok && m.From != conn.Connecting:
			return fmt.Errorf("supervisor %d's first transition leaves %s, not %s", m.Inc, m.From, conn.Connecting)
		case ok && last != m.From:
			return fmt.Errorf("supervisor %d's transition %s -%s-> %s does not continue from %s", m.Inc, m.From, m.Event, m.To, last)
		case !edges[[4]string{string(m.From), string(m.Event), m.When, string(m.To)}]:
			return fmt.Errorf("supervisor %d's transition %s -%s-> %s (guard %q) is no edge of conn.Table()", m.Inc, m.From, m.Event, m.To, m.When)
		}
		h.traceLast[m.Inc] = m.To
	}
	h.traceChecked = len(h.Transitions)
	if !h.Final {
		return nil
	}
	steps := make([]trace.Step, len(h.Transitions))
	for i, m := range h.Transitions {
		steps[i] = traceStep(m)
	}
	if err := trace.Check(table, steps); err != nil {
		return fmt.Errorf("the trace breaks conn.Table(): %w", err)
	}
	return nil
}

// writeTrace writes moves as a trace for fsmdot -trace.
func writeTrace(w io.Writer, moves []Move) error {
	for _, m := range moves {
		if err := trace.Write(w, traceStep(m)); err != nil {
			return err
		}
	}
	return nil
}
