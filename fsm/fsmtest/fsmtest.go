// Package fsmtest runs scripts of events on [fsm] machines and returns what
// happened as plain values, so a test states a whole run as one literal
// and compares it with go-cmp:
//
//	got, err := fsmtest.Run(spec, fsm.Options[S, E, D]{}, fsmtest.Fire[E, D]("dial"), ...)
//	if diff := cmp.Diff(want, got); diff != "" { ... }
//
// It also proves a table's edges: [Paths] derives the shortest event path
// from the initial state to every branch of a Spec (superstates' edges
// included, once each), [Drive] runs a driver along each path and fails
// the test naming every branch the system under test did not take, and
// [Coverage] counts edges and branches ("fsm coverage connection: 33/33
// edges, 33/33 branches (100%)").
package fsmtest

import (
	"context"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// Input is one event of a script and the data it is fired with.
type Input[E ~string, D any] struct {
	Event E
	Data  D
}

// Fire is an Input with the zero data.
func Fire[E ~string, D any](ev E) Input[E, D] { return Input[E, D]{Event: ev} }

// With is an Input carrying data.
func With[E ~string, D any](ev E, data D) Input[E, D] { return Input[E, D]{Event: ev, Data: data} }

// Record is one line of a trace: a transition (From, To, Event and the When
// of the guard that chose it), or an event the machine refused (From,
// Event and Err, To empty).
type Record[S ~string, E ~string] struct {
	From, To S
	Event    E
	When     string
	Err      string
}

// Run builds a machine from spec and opts, fires every input of script in
// order with a background context, and returns the trace: one Record per
// transition, in the order the Observer saw them (events that callbacks
// fire re-entrantly included), and one per input Fire refused. opts's own
// Observer and OnError still run. err is New's error, if the spec or
// options are invalid.
func Run[S ~string, E ~string, D any](spec fsm.Spec[S, E, D], opts fsm.Options[S, E, D], script ...Input[E, D]) (trace []Record[S, E], err error) {
	observer, onError := opts.Observer, opts.OnError
	opts.Observer = func(st fsm.Step[S, E, D]) {
		trace = append(trace, Record[S, E]{From: st.From, To: st.To, Event: st.Event, When: st.When})
		if observer != nil {
			observer(st)
		}
	}
	var m *fsm.Machine[S, E, D]
	refused := func(ev E, err error) {
		trace = append(trace, Record[S, E]{From: m.State(), Event: ev, Err: err.Error()})
	}
	opts.OnError = func(ev E, err error) {
		refused(ev, err)
		if onError != nil {
			onError(ev, err)
		}
	}
	if m, err = fsm.New(spec, opts); err != nil {
		return nil, err
	}
	for _, in := range script {
		if err := m.FireWith(context.Background(), in.Event, in.Data); err != nil {
			refused(in.Event, err)
		}
	}
	return trace, nil
}
