package fsm_test

import (
	"context"
	"fmt"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// A circuit breaker, declared end to end: the table with its guards, its
// validation, a run whose events carry data, and its diagrams.
type (
	breakerState string
	breakerEvent string
	// breakerCall is what a call's outcome carries: the consecutive
	// failures counted so far, this one included.
	breakerCall struct{ Failures int }
)

func breakerSpec() fsm.Spec[breakerState, breakerEvent, breakerCall] {
	tripped := func(c breakerCall) bool { return c.Failures >= 3 }
	return fsm.Spec[breakerState, breakerEvent, breakerCall]{
		Name:    "breaker",
		Initial: "closed",
		States: []fsm.State[breakerState]{
			{Name: "closed", Doc: "calls pass"},
			{Name: "open", Doc: "calls fail fast", Alarm: true},
			{Name: "half-open", Doc: "one trial call passes"},
		},
		Events: []fsm.Event[breakerEvent]{
			{Name: "failure"}, {Name: "success"}, {Name: "cooled-down"},
		},
		Transitions: []fsm.Transition[breakerState, breakerEvent, breakerCall]{
			// Tried in order: the guarded transition first, then the fallback.
			{Event: "failure", From: []breakerState{"closed"}, To: "open", Guard: tripped, When: "3 in a row"},
			{Event: "failure", From: []breakerState{"closed"}, To: "closed"},
			{Event: "success", From: []breakerState{"closed"}, To: "closed"},
			{Event: "cooled-down", From: []breakerState{"open"}, To: "half-open"},
			{Event: "success", From: []breakerState{"half-open"}, To: "closed"},
			{Event: "failure", From: []breakerState{"half-open"}, To: "open"},
		},
	}
}

func Example_circuitBreaker() {
	spec := breakerSpec()
	if err := spec.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	failures := 0
	m, err := fsm.New(spec, fsm.Options[breakerState, breakerEvent, breakerCall]{
		OnEnter: map[breakerState]func(context.Context, fsm.Step[breakerState, breakerEvent, breakerCall]){
			"open": func(_ context.Context, st fsm.Step[breakerState, breakerEvent, breakerCall]) {
				fmt.Printf("  tripped after %d failures\n", st.Data.Failures)
			},
		},
		OnExit: map[breakerState]func(context.Context, fsm.Step[breakerState, breakerEvent, breakerCall]){
			"half-open": func(context.Context, fsm.Step[breakerState, breakerEvent, breakerCall]) { failures = 0 },
		},
		Observer: func(st fsm.Step[breakerState, breakerEvent, breakerCall]) {
			fmt.Printf("%s --%s--> %s\n", st.From, st.Event, st.To)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	call := func(ok bool) {
		if ok {
			failures = 0
			_ = m.FireWith(ctx, "success", breakerCall{})
			return
		}
		failures++
		_ = m.FireWith(ctx, "failure", breakerCall{Failures: failures})
	}
	call(false)
	call(false)
	call(false)
	fmt.Println("success permitted while open:", m.Can("success"))
	_ = m.Fire(ctx, "cooled-down")
	call(true)

	fmt.Print(spec.DOT())
	fmt.Print(spec.Mermaid())
	// Output:
	// closed --failure--> closed
	// closed --failure--> closed
	//   tripped after 3 failures
	// closed --failure--> open
	// success permitted while open: false
	// open --cooled-down--> half-open
	// half-open --success--> closed
	// digraph "breaker" {
	// 	rankdir=LR;
	// 	node [shape=box, style=rounded, fontname="Helvetica"];
	// 	edge [fontname="Helvetica"];
	// 	"__start" [shape=point, width=0.15, label=""];
	// 	"__start" -> "closed";
	// 	"closed" [label="closed\ncalls pass"];
	// 	"half-open" [label="half-open\none trial call passes"];
	// 	"open" [label="open\ncalls fail fast", fillcolor="#f8d7da", color="#b02a37", style="rounded,filled"];
	// 	"closed" -> "closed" [label="failure\nsuccess"];
	// 	"closed" -> "open" [label="failure [3 in a row]"];
	// 	"half-open" -> "closed" [label="success"];
	// 	"half-open" -> "open" [label="failure"];
	// 	"open" -> "half-open" [label="cooled-down"];
	// }
	// stateDiagram-v2
	//     %% breaker
	//     state "half-open" as half_open
	//     closed : calls pass
	//     half_open : one trial call passes
	//     open : calls fail fast
	//     [*] --> closed
	//     closed --> closed : failure
	//     closed --> closed : success
	//     closed --> open : failure [3 in a row]
	//     half_open --> closed : success
	//     half_open --> open : failure
	//     open --> half_open : cooled-down
	//     classDef alarm fill:#f8d7da,stroke:#b02a37,color:#000
	//     class open alarm
}
