package fsm_test

import (
	"context"
	"fmt"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// The circuit breaker again, with a superstate: closed and half-open both
// serve calls, so "serving" holds them, and the transitions they share
// (a success closes the breaker, an operator's trip opens it) are
// declared once, from serving. Entering and leaving serving runs its own
// callbacks, once, around those of the leaf.
func Example_circuitBreakerSuperstate() {
	type call = breakerCall
	tripped := func(c call) bool { return c.Failures >= 3 }
	spec := fsm.Spec[breakerState, breakerEvent, call]{
		Name:    "breaker",
		Initial: "serving",
		States: []fsm.State[breakerState]{
			{Name: "serving", Doc: "calls pass", Initial: "closed"},
			{Name: "closed", Parent: "serving"},
			{Name: "half-open", Parent: "serving", Doc: "one trial call passes"},
			{Name: "open", Doc: "calls fail fast", Alarm: true},
		},
		Events: []fsm.Event[breakerEvent]{
			{Name: "failure"}, {Name: "success"}, {Name: "cooled-down"}, {Name: "trip"},
		},
		Transitions: []fsm.Transition[breakerState, breakerEvent, call]{
			{Event: "failure", From: []breakerState{"closed"}, To: "open", Guard: tripped, When: "3 in a row"},
			{Event: "failure", From: []breakerState{"closed"}, To: "closed"},
			{Event: "failure", From: []breakerState{"half-open"}, To: "open"},
			{Event: "success", From: []breakerState{"serving"}, To: "closed"},
			{Event: "trip", From: []breakerState{"serving"}, To: "open"},
			{Event: "cooled-down", From: []breakerState{"open"}, To: "half-open"},
		},
	}
	if err := spec.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	say := func(what string) func(context.Context, fsm.Step[breakerState, breakerEvent, call]) {
		return func(context.Context, fsm.Step[breakerState, breakerEvent, call]) { fmt.Println("  " + what) }
	}
	m, err := fsm.New(spec, fsm.Options[breakerState, breakerEvent, call]{
		OnEnter: map[breakerState]func(context.Context, fsm.Step[breakerState, breakerEvent, call]){
			"serving": say("enter serving"), "half-open": say("enter half-open"), "open": say("enter open"),
		},
		OnExit: map[breakerState]func(context.Context, fsm.Step[breakerState, breakerEvent, call]){
			"serving": say("exit serving"), "half-open": say("exit half-open"), "closed": say("exit closed"),
		},
		Observer: func(st fsm.Step[breakerState, breakerEvent, call]) {
			fmt.Printf("%s --%s--> %s\n", st.From, st.Event, st.To)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	fmt.Println("in serving:", m.In("serving"), "state:", m.State())
	_ = m.Fire(ctx, "trip")
	_ = m.Fire(ctx, "cooled-down")
	_ = m.FireWith(ctx, "success", call{})
	fmt.Println("in serving:", m.In("serving"), "state:", m.State())
	fmt.Print(spec.Mermaid())
	// Output:
	// in serving: true state: closed
	//   exit closed
	//   exit serving
	//   enter open
	// closed --trip--> open
	//   enter serving
	//   enter half-open
	// open --cooled-down--> half-open
	//   exit half-open
	// half-open --success--> closed
	// in serving: true state: closed
	// stateDiagram-v2
	//     %% breaker
	//     open : calls fail fast
	//     [*] --> serving
	//     state serving {
	//         state "half-open" as half_open
	//         half_open : one trial call passes
	//         [*] --> closed
	//         closed --> closed : failure
	//     }
	//     closed --> open : failure [3 in a row]
	//     half_open --> open : failure
	//     open --> half_open : cooled-down
	//     serving --> closed : success
	//     serving --> open : trip
	//     classDef alarm fill:#f8d7da,stroke:#b02a37,color:#000
	//     class open alarm
}
