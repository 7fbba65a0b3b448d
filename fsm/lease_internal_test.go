package fsm

import (
	"context"
	"testing"
)

// TestLeaseRead: State and Can of a machine whose engine passes to another
// machine between loading it and reading it answer for their own machine,
// not for the engine's new one.
func TestLeaseRead(t *testing.T) {
	type st = string
	spec := Spec[st, st, struct{}]{
		Name: "lease", Initial: "a",
		States: []State[st]{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Events: []Event[st]{{Name: "go"}, {Name: "back"}, {Name: "reset"}},
		Transitions: []Transition[st, st, struct{}]{
			{Event: "go", From: []st{"a"}, To: "b"},
			{Event: "go", From: []st{"b"}, To: "c"},
			{Event: "back", From: []st{"c"}, To: "b"},
			{Event: "reset", From: []st{"b", "c"}, To: "a"},
		},
	}
	c, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fire := func(m *Machine[st, st, struct{}], ev st) {
		t.Helper()
		if err := m.Fire(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { leaseRead = nil }()

	// mine holds its engine in a; other rests in b.
	mine, _ := c.New(Options[st, st, struct{}]{})
	other, _ := c.NewIn("b", Options[st, st, struct{}]{})
	other.Rest()
	leaseRead = func() {
		leaseRead = nil
		mine.Rest()       // mine's engine goes back to c...
		fire(other, "go") // ...and other takes it, into c
	}
	if got := mine.State(); got != "a" {
		t.Errorf("State() = %q while its engine passed to a machine in c, want a", got)
	}

	// mine holds its engine in c; other rests in c.
	other.Rest()
	fire(mine, "go")
	fire(mine, "go")
	leaseRead = func() {
		leaseRead = nil
		mine.Rest()          // mine rests in c...
		fire(other, "reset") // ...and other takes its engine into a, where back is not permitted
	}
	if !mine.Can("back") {
		t.Errorf("Can(back) = false for a machine in c while its engine passed to a machine in a")
	}
	if mine.State() != "c" || other.State() != "a" {
		t.Errorf("mine in %s, other in %s; want c and a", mine.State(), other.State())
	}
}
