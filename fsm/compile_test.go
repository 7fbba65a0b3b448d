package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpfsm/mcpfsm/fsm"
)

func ExampleCompile() {
	doors, err := fsm.Compile(doorSpec())
	if err != nil {
		panic(err)
	}
	// Machines of one compiled spec share its tables, not their state.
	front, _ := doors.New(fsm.Options[doorState, doorEvent, struct{}]{})
	back, _ := doors.New(fsm.Options[doorState, doorEvent, struct{}]{})
	_ = front.Fire(context.Background(), "open")
	fmt.Println(front.State(), back.State())
	// Output: open closed
}

// TestCompiled: machines of one Compiled are independent, validate their
// options as New does, and Compile validates the spec as New does.
func TestCompiled(t *testing.T) {
	c, err := fsm.Compile(doorSpec())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, _ := c.New(fsm.Options[doorState, doorEvent, struct{}]{})
	entered := 0
	b, _ := c.New(fsm.Options[doorState, doorEvent, struct{}]{
		OnEnter: map[doorState]func(context.Context, fsm.Step[doorState, doorEvent, struct{}]){
			"broken": func(context.Context, fsm.Step[doorState, doorEvent, struct{}]) { entered++ },
		},
	})
	if err := a.Fire(ctx, "kick"); err != nil {
		t.Fatal(err)
	}
	if a.State() != "broken" || b.State() != "closed" || entered != 0 {
		t.Fatalf("after kicking a: a %s, b %s, b's callback ran %d times; want broken, closed, 0", a.State(), b.State(), entered)
	}
	if err := b.Fire(ctx, "open"); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := a.Fire(ctx, "open"); !errors.Is(err, fsm.ErrInvalidEvent) {
		t.Fatalf("a (broken) open: %v, want ErrInvalidEvent", err)
	}
	_, err = c.New(fsm.Options[doorState, doorEvent, struct{}]{
		OnExit: map[doorState]func(context.Context, fsm.Step[doorState, doorEvent, struct{}]){"ajar": nil},
	})
	if !errors.Is(err, fsm.ErrInvalidSpec) {
		t.Errorf("an unknown OnExit key: %v, want ErrInvalidSpec", err)
	}
	bad := doorSpec()
	bad.Initial = "nowhere"
	if _, err := fsm.Compile(bad); !errors.Is(err, fsm.ErrInvalidSpec) {
		t.Errorf("Compile of an invalid spec: %v, want ErrInvalidSpec", err)
	}
}

// TestNewIn: a machine made in a given state starts there without running
// its entry callback, then follows the table from it; an undeclared state
// is refused.
func TestNewIn(t *testing.T) {
	c, err := fsm.Compile(doorSpec())
	if err != nil {
		t.Fatal(err)
	}
	var entered []doorState
	m, err := c.NewIn("open", fsm.Options[doorState, doorEvent, struct{}]{
		OnEnter: map[doorState]func(context.Context, fsm.Step[doorState, doorEvent, struct{}]){
			"open":   func(_ context.Context, st fsm.Step[doorState, doorEvent, struct{}]) { entered = append(entered, st.To) },
			"closed": func(_ context.Context, st fsm.Step[doorState, doorEvent, struct{}]) { entered = append(entered, st.To) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.State() != "open" || len(entered) != 0 {
		t.Fatalf("made in open: state %s, entry callbacks %v; want open, none", m.State(), entered)
	}
	if err := m.Fire(context.Background(), "close"); err != nil {
		t.Fatal(err)
	}
	if m.State() != "closed" || fmt.Sprint(entered) != "[closed]" {
		t.Fatalf("after close: state %s, entered %v; want closed, [closed]", m.State(), entered)
	}
	if _, err := c.NewIn("ajar", fsm.Options[doorState, doorEvent, struct{}]{}); !errors.Is(err, fsm.ErrInvalidSpec) {
		t.Fatalf("NewIn of an undeclared state: %v, want ErrInvalidSpec", err)
	}
}
