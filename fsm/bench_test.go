package fsm_test

import (
	"context"
	"testing"
	"time"

	looplab "github.com/looplab/fsm"

	"github.com/mcpfsm/mcpfsm/fsm"
)

func pingPong(i int) string {
	if i%2 == 0 {
		return "ping"
	}
	return "pong"
}

// firePaths are the three ways of BenchmarkFire to run one ping-pong
// transition: through Machine.Fire, through raw looplab Event with the same
// table, and a plain switch.
func firePaths(b *testing.B) (names []string, paths []func(ctx context.Context, i int)) {
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
	f := looplab.NewFSM("a", looplab.Events{
		{Name: "ping", Src: []string{"a"}, Dst: "b"},
		{Name: "pong", Src: []string{"b"}, Dst: "a"},
	}, nil)
	state := "a"
	return []string{"mcpfsm", "looplab", "switch"}, []func(context.Context, int){
		func(ctx context.Context, i int) {
			if err := m.Fire(ctx, pingPong(i)); err != nil {
				b.Fatal(err)
			}
		},
		func(ctx context.Context, i int) {
			if err := f.Event(ctx, pingPong(i)); err != nil {
				b.Fatal(err)
			}
		},
		func(_ context.Context, i int) {
			switch ev := pingPong(i); {
			case state == "a" && ev == "ping":
				state = "b"
			case state == "b" && ev == "pong":
				state = "a"
			default:
				b.Fatalf("event %s not permitted in %s", ev, state)
			}
		},
	}
}

// BenchmarkFire ping-pongs between two states with the same table three
// ways, to show what the typed layer and looplab each cost: each alone
// ("mcpfsm", "looplab", "switch"), and "paired", which runs blocks of the
// first two in alternating order in one loop, so that the machine's load
// weighs on both alike, and reports the ratio of mcpfsm to looplab.
func BenchmarkFire(b *testing.B) {
	ctx := context.Background()
	names, _ := firePaths(b)
	for k, name := range names {
		b.Run(name, func(b *testing.B) {
			_, paths := firePaths(b)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				paths[k](ctx, i)
			}
		})
	}
	b.Run("paired", func(b *testing.B) {
		_, paths := firePaths(b)
		const block = 256
		var took [2]time.Duration
		var fired [2]int // each path's own count keeps its ping-pong in step
		b.ResetTimer()
		for r, left := 0, b.N; left > 0; r++ {
			n := min(block, left)
			left -= n
			for k := range 2 {
				j := (r + k) % 2
				t0 := time.Now()
				for range n {
					paths[j](ctx, fired[j])
					fired[j]++
				}
				took[j] += time.Since(t0)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(took[0])/float64(took[1]), "ratio-vs-looplab")
		b.ReportMetric(float64(took[0])/float64(b.N), "mcpfsm-ns")
		b.ReportMetric(float64(took[1])/float64(b.N), "looplab-ns")
	})
}
