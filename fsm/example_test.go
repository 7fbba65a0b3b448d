package fsm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpfsm/mcpfsm/fsm"
)

type (
	doorState string
	doorEvent string
)

func doorSpec() fsm.Spec[doorState, doorEvent, struct{}] {
	return fsm.Spec[doorState, doorEvent, struct{}]{
		Name:    "door",
		Initial: "closed",
		States: []fsm.State[doorState]{
			{Name: "closed", Doc: "Shut, can be opened."},
			{Name: "open", Doc: "Wide open."},
			{Name: "broken", Doc: "Off its hinges.", Terminal: true, Alarm: true},
		},
		Events: []fsm.Event[doorEvent]{{Name: "open"}, {Name: "close"}, {Name: "kick"}},
		Transitions: []fsm.Transition[doorState, doorEvent, struct{}]{
			{Event: "open", From: []doorState{"closed"}, To: "open"},
			{Event: "close", From: []doorState{"open"}, To: "closed"},
			{Event: "kick", From: []doorState{"closed", "open"}, To: "broken"},
		},
	}
}

func ExampleNew() {
	var m *fsm.Machine[doorState, doorEvent, struct{}]
	m, err := fsm.New(doorSpec(), fsm.Options[doorState, doorEvent, struct{}]{
		OnEnter: map[doorState]func(context.Context, fsm.Step[doorState, doorEvent, struct{}]){
			// A spring closes the door: firing from a callback queues the
			// event, which runs once this transition has completed.
			"open": func(ctx context.Context, _ fsm.Step[doorState, doorEvent, struct{}]) { _ = m.Fire(ctx, "close") },
		},
		Observer: func(st fsm.Step[doorState, doorEvent, struct{}]) {
			fmt.Printf("%s --%s--> %s\n", st.From, st.Event, st.To)
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := m.Fire(ctx, "open"); err != nil {
		panic(err)
	}
	fmt.Println("now", m.State(), "can:", m.Available())

	_ = m.Fire(ctx, "kick")
	err = m.Fire(ctx, "open")
	fmt.Println(errors.Is(err, fsm.ErrInvalidEvent), err)
	// Output:
	// closed --open--> open
	// open --close--> closed
	// now closed can: [kick open]
	// closed --kick--> broken
	// true fsm "door": event open is not permitted in state broken (permitted: none)
}

func ExampleSpec_Validate() {
	s := doorSpec()
	s.Transitions = append(s.Transitions, fsm.Transition[doorState, doorEvent, struct{}]{
		Event: "close", From: []doorState{"broken"}, To: "closed",
	})
	err := s.Validate()
	fmt.Println(errors.Is(err, fsm.ErrInvalidSpec))
	fmt.Println(err)
	// Output:
	// true
	// fsm: invalid spec "door": Transitions[3] (event "close"): leaves terminal state "broken"; terminal states have no outgoing transitions
}

func ExampleSpec_Mermaid() {
	fmt.Print(doorSpec().Mermaid("open"))
	// Output:
	// stateDiagram-v2
	//     %% door
	//     broken : Off its hinges.
	//     closed : Shut, can be opened.
	//     open : Wide open.
	//     [*] --> closed
	//     closed --> broken : kick
	//     closed --> open : open
	//     open --> broken : kick
	//     open --> closed : close
	//     broken --> [*]
	//     classDef alarm fill:#f8d7da,stroke:#b02a37,color:#000
	//     classDef highlight fill:#cfe2ff,stroke:#0a58ca,stroke-width:3px,font-weight:bold
	//     class broken alarm
	//     class open highlight
}

func ExampleSpec_DOT() {
	fmt.Print(doorSpec().DOT())
	// Output:
	// digraph "door" {
	// 	rankdir=LR;
	// 	node [shape=box, style=rounded, fontname="Helvetica"];
	// 	edge [fontname="Helvetica"];
	// 	"__start" [shape=point, width=0.15, label=""];
	// 	"__start" -> "closed";
	// 	"broken" [label="broken\nOff its hinges.", peripheries=2, fillcolor="#f8d7da", color="#b02a37", style="rounded,filled"];
	// 	"closed" [label="closed\nShut, can be opened."];
	// 	"open" [label="open\nWide open."];
	// 	"closed" -> "broken" [label="kick"];
	// 	"closed" -> "open" [label="open"];
	// 	"open" -> "broken" [label="kick"];
	// 	"open" -> "closed" [label="close"];
	// }
}
