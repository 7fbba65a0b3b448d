// Package fsm declares typed, validated state machines as data and runs
// them on github.com/looplab/fsm, with deterministic diagram export.
//
// A machine is declared once, as data, in a [Spec]: its states, its events,
// the transitions between them and the guards that choose among the
// transitions of one event. [Spec.Validate] rejects tables with holes in
// them (undeclared or unreachable states, unused events, ambiguous or
// unreachable transitions, exits from terminal states), [New] builds a
// [Machine] from a valid Spec, and [Spec.DOT] and [Spec.Mermaid] draw the
// same table, so the code, the diagrams and the tests all read one
// declaration. Package fsmtest runs scripts of events on a machine and
// returns the trace, for go-cmp comparisons.
//
// States nest: a [State] with a Parent lies inside that superstate, whose
// transitions apply to every leaf inside it unless the leaf (or a nearer
// superstate) declares its own; entry and exit callbacks run for every
// state a transition enters or leaves, outermost entered first, innermost
// left first; [Machine.In] asks whether the machine is inside a
// superstate; [Spec.Flatten] lists the leaf table the engine runs. Package
// fsmtest derives a shortest path to every edge and counts coverage, and
// package trace checks logged runs against the table. docs/fsm.md in the
// repository describes the package as a library.
//
// Events carry typed data (the Spec's third type parameter): a guard reads
// it to choose the transition, and OnExit, OnEnter and the Observer receive
// it in the [Step], so whatever a transition needs travels with it.
//
// # What looplab does, and where this package works around it
//
// The looplab engine holds the current state ([Machine.State]), answers
// [Machine.Can], and runs OnEnter and the Observer from its enter_state
// callback. Each engine copies the whole transition table into maps of its
// own, so a machine that sits in one state most of the time can be put at
// rest ([Machine.Rest]): it keeps only its state's name and hands its
// engine back to its [Compiled], and its next event takes an engine from
// there (or builds one) in that state. Each place where looplab is wrong has one workaround, with its
// test:
//
//   - an event fired with a context that is cancelled before the engine
//     has finished leaves it stuck "in transition" for ever (looplab issue
//     #115): the engine gets context.WithoutCancel, callbacks the caller's
//     context (TestCancelDuringTransition, TestFireCancelledContext);
//   - a self-loop is not a transition for looplab (it runs no enter_state
//     and reports NoTransitionError): the Machine runs the callbacks itself
//     (TestSelfLoop);
//   - looplab runs leave_state under its event lock, so Can blocks and a
//     panic jams the engine: OnExit runs before the engine is asked to move
//     (TestExitPanicLeavesState);
//   - firing from a looplab callback deadlocks or nests: events fired
//     while one runs are queued and run to completion in order
//     (see [Machine.Fire], TestFireReentrant);
//   - callback keys that match no state are ignored by looplab: here they
//     are typed and [New] rejects undeclared ones;
//   - looplab's Visualize and AvailableTransitions are non-deterministic:
//     here every listing is sorted and diagrams come from the Spec.
package fsm
