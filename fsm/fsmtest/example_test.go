package fsmtest_test

import (
	"fmt"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/fsmtest"
)

func ExampleRun() {
	spec := fsm.Spec[string, string, int]{
		Name:    "door",
		Initial: "closed",
		States:  []fsm.State[string]{{Name: "closed"}, {Name: "open"}, {Name: "broken", Terminal: true}},
		Events:  []fsm.Event[string]{{Name: "push"}, {Name: "close"}},
		Transitions: []fsm.Transition[string, string, int]{
			{Event: "push", From: []string{"closed"}, To: "broken", Guard: func(force int) bool { return force > 9 }, When: "too hard"},
			{Event: "push", From: []string{"closed"}, To: "open"},
			{Event: "close", From: []string{"open"}, To: "closed"},
		},
	}
	trace, err := fsmtest.Run(spec, fsm.Options[string, string, int]{},
		fsmtest.With("push", 1), fsmtest.Fire[string, int]("push"), fsmtest.Fire[string, int]("close"), fsmtest.With("push", 10))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range trace {
		fmt.Printf("%+v\n", r)
	}
	// Output:
	// {From:closed To:open Event:push When: Err:}
	// {From:open To: Event:push When: Err:fsm "door": event push is not permitted in state open (permitted: close)}
	// {From:open To:closed Event:close When: Err:}
	// {From:closed To:broken Event:push When:too hard Err:}
}
