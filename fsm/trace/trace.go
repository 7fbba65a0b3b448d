// Package trace reads and checks traces of [fsm] machines: JSON lines, one
// per transition, as a program logs them, checked against the table the
// machine runs, so a trace that names a transition the table does not
// declare, or skips one, is caught and named by its step.
//
// A line is a [Step]:
//
//	{"time":"2026-07-28T10:00:00Z","machine":"git","from":"connecting","event":"connected","to":"established","extra":{"attempt":1,"generation":3}}
//
// Only machine, from, event, when and to mean anything to this package;
// time and extra are carried as the writer wrote them.
package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// Step is one transition of a trace: the fields of an [fsm.Step] as
// strings, which machine took it and when, and whatever else its writer
// records.
type Step struct {
	Time string `json:"time,omitempty"` // as the writer formats it (RFC 3339 for conn)
	// Machine names the machine that took the step, among the machines of
	// one trace (conn writes the server's name); the steps of one machine
	// chain, each starting where the one before it ended.
	Machine string `json:"machine,omitempty"`
	From    string `json:"from"`
	Event   string `json:"event"`
	When    string `json:"when,omitempty"` // the condition of the guard that chose the transition, as [fsm.Step.When]
	To      string `json:"to"`
	// Extra is the writer's own record of the step, a JSON value this
	// package carries as it is (conn's is a conn.TraceExtra).
	Extra json.RawMessage `json:"extra,omitempty"`

	// Line is the step's line in the file Read read it from (1-based), or
	// 0 for a step made in memory.
	Line int `json:"-"`
}

// ErrTrace is matched (via errors.Is) by every [*Error].
var ErrTrace = errors.New("fsm trace: invalid")

// Error reports one step of a trace that cannot be read or breaks the
// table. It matches errors.Is(err, ErrTrace).
type Error struct {
	Step   int    // 1-based index of the step in the trace; 0 when Read fails before one
	Line   int    // 1-based line in the file, or 0
	Reason string // what the step breaks
}

// Error implements error: "step 7 (line 9): no edge ...".
func (e *Error) Error() string {
	where := "step " + strconv.Itoa(e.Step)
	switch {
	case e.Step == 0:
		where = "line " + strconv.Itoa(e.Line)
	case e.Line > 0 && e.Line != e.Step:
		where += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return where + ": " + e.Reason
}

// Is reports whether target is [ErrTrace].
func (e *Error) Is(target error) bool { return target == ErrTrace }

// Read reads a trace: one JSON object per line, blank lines skipped. An
// error names the line (as an [*Error]), the first that is not a step
// with from, event and to, or the reader's error.
//
// Read also reads the lines written before steps had Machine, When and
// Extra: their "server" is the machine, their "guard" the condition, and
// their members other than the step's own make up Extra.
func Read(r io.Reader) ([]Step, error) {
	var out []Step
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		s, err := decode(text)
		if err != nil {
			return nil, &Error{Step: 0, Line: line, Reason: "not a JSON object of a step: " + err.Error()}
		}
		for _, f := range []struct{ name, v string }{{"from", s.From}, {"event", s.Event}, {"to", s.To}} {
			if f.v == "" {
				return nil, &Error{Step: 0, Line: line, Reason: fmt.Sprintf("has no %q; every step names from, event and to", f.name)}
			}
		}
		s.Line = line
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fsm trace: reading: %w", err)
	}
	return out, nil
}

// decode reads one line. A line without "extra" may be one written
// before Step had Machine, When and Extra, which held the writer's
// fields at the top level beside "server" and "guard".
func decode(text []byte) (Step, error) {
	var s Step
	if err := json.Unmarshal(text, &s); err != nil || s.Extra != nil {
		return s, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(text, &members); err != nil {
		return s, err
	}
	for _, old := range []struct {
		name  string
		field *string
	}{{"server", &s.Machine}, {"guard", &s.When}} {
		if v, ok := members[old.name]; ok && *old.field == "" {
			if err := json.Unmarshal(v, old.field); err != nil {
				return s, fmt.Errorf("%q: %w", old.name, err)
			}
		}
	}
	for _, own := range []string{"time", "machine", "server", "from", "event", "when", "guard", "to"} {
		delete(members, own)
	}
	if len(members) > 0 {
		extra, err := json.Marshal(members)
		if err != nil {
			return s, err
		}
		s.Extra = extra
	}
	return s, nil
}

// Write writes s as one line of a trace.
func Write(w io.Writer, s Step) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Machines returns the distinct Machine values of steps, sorted.
func Machines(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Machine)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ForMachine returns the steps of one machine, in order.
func ForMachine(steps []Step, machine string) []Step {
	var out []Step
	for _, s := range steps {
		if s.Machine == machine {
			out = append(out, s)
		}
	}
	return out
}

// Check reports, as an [*Error], the first step of steps that breaks
// spec: a From that is not a declared leaf, a (from, event) with no edge
// in the flattened table ([fsm.Spec.Flatten], so a superstate's
// transitions count from every leaf inside it), an edge that does not
// lead to To, a When that is not the condition of that edge, or a step
// that does not start where the previous step of the same Machine ended.
// It returns nil for a trace every step of which the table allows.
func Check[S ~string, E ~string, D any](spec fsm.Spec[S, E, D], steps []Step) error {
	type key struct {
		from S
		ev   E
	}
	edges := map[key][]fsm.Edge[S, E]{}
	for _, e := range spec.Flatten() {
		edges[key{e.From, e.Event}] = append(edges[key{e.From, e.Event}], e)
	}
	type last struct {
		step int
		to   string
	}
	prev := map[string]last{}
	for i, s := range steps {
		fail := func(format string, a ...any) error {
			return &Error{Step: i + 1, Line: s.Line, Reason: fmt.Sprintf(format, a...)}
		}
		from, ev, to := S(s.From), E(s.Event), S(s.To)
		if _, ok := spec.State(from); !ok {
			return fail("state %q is not declared in %q", s.From, spec.Name)
		}
		if spec.Superstate(from) {
			return fail("%q is a superstate, which a machine is never in; a trace names leaf states", s.From)
		}
		if p, ok := prev[s.Machine]; ok && p.to != s.From {
			return fail("starts in %q, but step %d of machine %q ended in %q", s.From, p.step, s.Machine, p.to)
		}
		arms := edges[key{from, ev}]
		if len(arms) == 0 {
			return fail("no edge %q from %q", s.Event, s.From)
		}
		var targets, whens []string
		found := false
		for _, a := range arms {
			if a.To == to {
				whens = append(whens, a.When)
				found = found || a.When == s.When
			}
			targets = append(targets, strconv.Quote(string(a.To)))
		}
		if found {
			prev[s.Machine] = last{i + 1, s.To}
			continue
		}
		if len(whens) == 0 {
			return fail("edge %q from %q leads to %s, not %q", s.Event, s.From, joinOr(slices.Compact(targets)), s.To)
		}
		for i, w := range whens {
			if w == "" {
				whens[i] = "no guard"
			} else {
				whens[i] = "guard " + strconv.Quote(w)
			}
		}
		if s.When == "" {
			return fail("edge %q from %q to %q is taken with %s, not without one", s.Event, s.From, s.To, joinOr(whens))
		}
		return fail("edge %q from %q to %q is taken with %s, not guard %q", s.Event, s.From, s.To, joinOr(whens), s.When)
	}
	return nil
}

func joinOr(items []string) string {
	switch len(items) {
	case 0:
		return "nothing"
	case 1:
		return items[0]
	}
	out := ""
	for i, it := range items {
		switch {
		case i == 0:
		case i == len(items)-1:
			out += " or "
		default:
			out += ", "
		}
		out += it
	}
	return out
}

// Overlay returns what the diagrams of spec show of a checked trace: how
// often each drawn transition was taken ([fsm.DrawnEdge]: a superstate's
// transition counts once, whichever leaf took it), and the state each
// machine ended in, highlighted. Steps that are no edge of spec are not
// counted; Check them first.
func Overlay[S ~string, E ~string, D any](spec fsm.Spec[S, E, D], steps []Step) fsm.Overlay[S] {
	type key struct {
		from S
		ev   E
		when string
		to   S
	}
	drawn := map[key]fsm.DrawnEdge[S]{}
	for _, e := range spec.Flatten() {
		drawn[key{e.From, e.Event, e.When, e.To}] = e.Drawn()
	}
	o := fsm.Overlay[S]{Taken: map[fsm.DrawnEdge[S]]int{}}
	end := map[string]S{}
	for _, s := range steps {
		if d, ok := drawn[key{S(s.From), E(s.Event), s.When, S(s.To)}]; ok {
			o.Taken[d]++
			end[s.Machine] = S(s.To)
		}
	}
	for _, machine := range slices.Sorted(maps.Keys(end)) {
		if !slices.Contains(o.Highlight, end[machine]) {
			o.Highlight = append(o.Highlight, end[machine])
		}
	}
	return o
}
