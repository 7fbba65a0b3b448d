package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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

// TestRest: a machine at rest keeps its state, answers State and Can from
// the tables, and its next event builds the engine again and runs every
// callback; at rest it holds a fraction of the memory of one with its
// engine.
func TestRest(t *testing.T) {
	c, err := fsm.Compile(doorSpec())
	if err != nil {
		t.Fatal(err)
	}
	var trace []string
	cb := func(what string) func(context.Context, fsm.Step[doorState, doorEvent, struct{}]) {
		return func(_ context.Context, st fsm.Step[doorState, doorEvent, struct{}]) {
			trace = append(trace, fmt.Sprintf("%s %s->%s", what, st.From, st.To))
		}
	}
	m, err := c.New(fsm.Options[doorState, doorEvent, struct{}]{
		OnExit:  map[doorState]func(context.Context, fsm.Step[doorState, doorEvent, struct{}]){"closed": cb("exit")},
		OnEnter: map[doorState]func(context.Context, fsm.Step[doorState, doorEvent, struct{}]){"open": cb("enter")},
		Observer: func(st fsm.Step[doorState, doorEvent, struct{}]) {
			trace = append(trace, fmt.Sprintf("saw %s->%s", st.From, st.To))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Resting() {
		t.Fatal("a new machine reports it is at rest")
	}
	m.Rest()
	m.Rest() // twice is fine
	if !m.Resting() {
		t.Fatal("Rest did not put the machine at rest")
	}
	if m.State() != "closed" || !m.Can("open") || m.Can("close") || fmt.Sprint(m.Available()) != "[kick open]" {
		t.Fatalf("at rest in closed: state %s, Can(open) %v, Can(close) %v, Available %v", m.State(), m.Can("open"), m.Can("close"), m.Available())
	}
	if err := m.Fire(context.Background(), "open"); err != nil {
		t.Fatal(err)
	}
	if want := "[exit closed->open enter closed->open saw closed->open]"; fmt.Sprint(trace) != want {
		t.Fatalf("after open from rest: %v, want %s", trace, want)
	}
	if m.Resting() {
		t.Fatal("a machine that ran an event still reports it is at rest")
	}
	m.Rest()
	if err := m.Fire(context.Background(), "open"); !errors.Is(err, fsm.ErrInvalidEvent) || m.State() != "open" {
		t.Fatalf("open again from rest in open: %v in %s, want ErrInvalidEvent in open", err, m.State())
	}

	// Memory: many machines at rest against as many with their engines.
	const n = 1000
	held := func(newMachine func() *fsm.Machine[doorState, doorEvent, struct{}], rest bool) uint64 {
		ms := make([]*fsm.Machine[doorState, doorEvent, struct{}], n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range ms {
			ms[i] = newMachine()
			if rest {
				ms[i].Rest()
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(ms)
		return (after.HeapAlloc - before.HeapAlloc) / n
	}
	shared := func() *fsm.Machine[doorState, doorEvent, struct{}] {
		m, _ := c.New(fsm.Options[doorState, doorEvent, struct{}]{})
		return m
	}
	awake, resting := held(shared, false), held(shared, true)
	t.Logf("per machine: %d B at rest, %d B with its engine", resting, awake)
	if resting*2 > awake {
		t.Errorf("a machine at rest holds %d B, one with its engine %d B: want under half", resting, awake)
	}

	// A machine made by New has a Compiled of its own, which keeps no
	// engine: at rest, it is dropped.
	own := func() *fsm.Machine[doorState, doorEvent, struct{}] {
		m, _ := fsm.New(doorSpec(), fsm.Options[doorState, doorEvent, struct{}]{})
		return m
	}
	ownAwake, ownResting := held(own, false), held(own, true)
	t.Logf("per machine of New: %d B at rest, %d B with its engine", ownResting, ownAwake)
	if engine := int64(awake) - int64(resting); int64(ownAwake)-int64(ownResting) < engine/2 {
		t.Errorf("a machine of New at rest holds %d B, with its engine %d B: want about %d B less (its engine)", ownResting, ownAwake, engine)
	}
}

// TestRestConcurrent: Rest, State and Can from other goroutines while
// events run never race, never lose a step and never see an undeclared
// state (run with -race).
func TestRestConcurrent(t *testing.T) {
	c, err := fsm.Compile(doorSpec())
	if err != nil {
		t.Fatal(err)
	}
	var steps atomic.Int64
	m, _ := c.New(fsm.Options[doorState, doorEvent, struct{}]{
		Observer: func(fsm.Step[doorState, doorEvent, struct{}]) { steps.Add(1) },
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				m.Rest()
				if st := m.State(); st != "open" && st != "closed" {
					t.Errorf("State() = %q", st)
					return
				}
				m.Can("open")
			}
		}()
	}
	const rounds = 2000
	for range rounds {
		if err := m.Fire(context.Background(), "open"); err != nil {
			t.Fatal(err)
		}
		if err := m.Fire(context.Background(), "close"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if got := steps.Load(); got != 2*rounds {
		t.Fatalf("%d steps observed, want %d", got, 2*rounds)
	}
}

// TestRestHandsEngineOn: a machine that rests hands its engine to the next
// machine of its Compiled that needs one, which then runs its own
// callbacks and not the first machine's; so a burst after a rest costs
// next to nothing beyond the step itself.
func TestRestHandsEngineOn(t *testing.T) {
	c, err := fsm.Compile(doorSpec())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var sawA, sawB []string
	a, _ := c.New(fsm.Options[doorState, doorEvent, struct{}]{
		Observer: func(st fsm.Step[doorState, doorEvent, struct{}]) { sawA = append(sawA, string(st.To)) },
	})
	b, _ := c.NewIn("open", fsm.Options[doorState, doorEvent, struct{}]{
		Observer: func(st fsm.Step[doorState, doorEvent, struct{}]) { sawB = append(sawB, string(st.To)) },
	})
	b.Rest()
	a.Rest() // a's engine is the last handed back: b takes it
	if err := b.Fire(ctx, "close"); err != nil {
		t.Fatal(err)
	}
	if err := a.Fire(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sawA, sawB) != "[open] [closed]" || a.State() != "open" || b.State() != "closed" {
		t.Fatalf("a saw %v and is %s, b saw %v and is %s; want [open] open, [closed] closed", sawA, a.State(), sawB, b.State())
	}

	// Allocations: a rest before each event costs a few small objects,
	// not an engine (looplab's NewFSM alone allocates dozens).
	plain := testing.AllocsPerRun(200, func() {
		_ = a.Fire(ctx, "close")
		_ = a.Fire(ctx, "open")
	})
	rested := testing.AllocsPerRun(200, func() {
		a.Rest()
		_ = a.Fire(ctx, "close")
		a.Rest()
		_ = a.Fire(ctx, "open")
	})
	t.Logf("two events: %.0f allocations, %.0f with a rest before each", plain, rested)
	if rested > plain+4 {
		t.Errorf("two events with a rest before each allocate %.0f, without %.0f: want at most 4 more (the engine is not handed on)", rested, plain)
	}
}

// TestRestSharedEnginesConcurrent: engines passing between two machines of
// one Compiled while other goroutines read them never show one machine
// the other's state (run with -race). The machines live in disjoint
// halves of one table.
func TestRestSharedEnginesConcurrent(t *testing.T) {
	type st = string
	spec := fsm.Spec[st, st, struct{}]{
		Name: "halves", Initial: "a",
		States: []fsm.State[st]{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
		Events: []fsm.Event[st]{{Name: "flip"}, {Name: "left"}, {Name: "cross"}},
		Transitions: []fsm.Transition[st, st, struct{}]{
			{Event: "flip", From: []st{"a"}, To: "b"},
			{Event: "flip", From: []st{"b"}, To: "a"},
			{Event: "flip", From: []st{"c"}, To: "d"},
			{Event: "flip", From: []st{"d"}, To: "c"},
			{Event: "left", From: []st{"a", "b"}, To: "a"},
			{Event: "cross", From: []st{"a"}, To: "c"},
		},
	}
	c, err := fsm.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := c.New(fsm.Options[st, st, struct{}]{})
	right, _ := c.NewIn("c", fsm.Options[st, st, struct{}]{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	check := func(m *fsm.Machine[st, st, struct{}], own string, left bool) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := m.State(); !strings.Contains(own, s) {
				t.Errorf("State() = %q, want one of %q", s, own)
				return
			}
			if m.Can("left") != left {
				t.Errorf("Can(left) = %v on the machine in %q", !left, own)
				return
			}
		}
	}
	wg.Add(2)
	go check(left, "ab", true)
	go check(right, "cd", false)
	const rounds = 3000
	var fire sync.WaitGroup
	for _, m := range []*fsm.Machine[st, st, struct{}]{left, right} {
		fire.Go(func() {
			for range rounds {
				if err := m.Fire(context.Background(), "flip"); err != nil {
					t.Error(err)
					return
				}
				m.Rest()
			}
		})
	}
	fire.Wait()
	close(stop)
	wg.Wait()
	if left.State() != "a" || right.State() != "c" {
		t.Fatalf("after an even number of flips: %s and %s, want a and c", left.State(), right.State())
	}
}
