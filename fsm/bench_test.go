package fsm_test

import (
	"context"
	"testing"

	looplab "github.com/looplab/fsm"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// BenchmarkFire ping-pongs between two states with the same table three
// ways: through Machine.Fire, through raw looplab Event, and with a plain
// switch, to show what the typed layer and looplab each cost.
func BenchmarkFire(b *testing.B) {
	ctx := context.Background()
	pingPong := func(i int) string {
		if i%2 == 0 {
			return "ping"
		}
		return "pong"
	}

	b.Run("mcpfsm", func(b *testing.B) {
		spec := fsm.Spec[string, string, struct{}]{
			Name:    "pingpong",
			Initial: "a",
			States:  []fsm.State[string]{{Name: "a"}, {Name: "b"}},
			Events:  []fsm.Event[string]{{Name: "ping"}, {Name: "pong"}},
			Transitions: []fsm.Transition[string, string, struct{}]{
				{Event: "ping", From: []string{"a"}, To: "b"},
				{Event: "pong", From: []string{"b"}, To: "a"},
			},
		}
		m := mustNew(b, spec, fsm.Options[string, string, struct{}]{})
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := m.Fire(ctx, pingPong(i)); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("looplab", func(b *testing.B) {
		f := looplab.NewFSM("a", looplab.Events{
			{Name: "ping", Src: []string{"a"}, Dst: "b"},
			{Name: "pong", Src: []string{"b"}, Dst: "a"},
		}, nil)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := f.Event(ctx, pingPong(i)); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("switch", func(b *testing.B) {
		state := "a"
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			switch ev := pingPong(i); {
			case state == "a" && ev == "ping":
				state = "b"
			case state == "b" && ev == "pong":
				state = "a"
			default:
				b.Fatalf("event %s not permitted in %s", ev, state)
			}
		}
	})
}
