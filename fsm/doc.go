// Package fsm is a small generic layer over github.com/looplab/fsm that turns
// its string API into typed, validated, deadlock-free state machines with
// deterministic diagram export.
//
// A machine is declared once, as data, in a [Spec]: its states, its events
// and the transitions between them. [Spec.Validate] rejects tables with
// holes in them (undeclared or unreachable states, unused events, ambiguous
// transitions, exits from terminal states), [New] builds a [Machine] from a
// valid Spec, and [Spec.DOT] and [Spec.Mermaid] draw the same table, so the
// code, the diagrams and the tests all read one declaration.
//
// # Why not looplab directly
//
// looplab/fsm is used purely as the transition engine: this package
// registers no looplab callbacks at all, which removes looplab's traps by
// construction:
//
//   - callback keys that match no state or event are silently ignored by
//     looplab; here callbacks are keyed by the typed state and [New] rejects
//     undeclared keys;
//   - firing an event from a looplab callback deadlocks or nests; here
//     callbacks run after the transition, under a run-to-completion queue
//     (see [Machine.Fire]);
//   - an event fired with an already-cancelled context leaves a looplab
//     machine stuck "in transition" forever (looplab issue #115); here the
//     context is checked before the engine is touched and never reaches it;
//   - a self-loop is not a transition for looplab (it reports
//     NoTransitionError); here it is a real one;
//   - looplab's Visualize and AvailableTransitions are non-deterministic;
//     here every listing is sorted and diagrams are generated from the Spec.
package fsm
