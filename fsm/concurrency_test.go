package fsm_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
)

func TestCallbackPanicDoesNotJam(t *testing.T) {
	var rec recorder
	var m *fsm.Machine[connState, connEvent, connData]
	panicked := false
	opts := rec.options()
	opts.OnEnter = map[connState]func(context.Context, step){
		"connecting": func(ctx context.Context, _ step) {
			if !panicked {
				panicked = true
				_ = m.Fire(ctx, "established") // queued behind the panic
				panic("boom")
			}
		},
	}
	m = mustNew(t, connSpec(), opts)

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want boom", r)
			}
		}()
		_ = m.Fire(t.Context(), "dial")
		t.Fatal("Fire did not re-panic")
	}()
	if m.State() != "connecting" {
		t.Fatalf("State() after panic = %s, want connecting (the transition happened)", m.State())
	}
	// The next Fire first runs the event queued before the panic, then its own.
	if err := m.Fire(t.Context(), "ping"); err != nil {
		t.Fatalf("Fire after panic: %v", err)
	}
	if diff := cmp.Diff([]step{{From: "connecting", To: "connected", Event: "established"}, {From: "connected", To: "connected", Event: "ping"}}, rec.steps); diff != "" {
		t.Errorf("steps after panic (-want +got):\n%s", diff)
	}
	// The own event's error still comes back to the caller behind a backlog.
	if err := m.Fire(t.Context(), "dial"); !errors.Is(err, fsm.ErrInvalidEvent) {
		t.Errorf("Fire(dial) = %v, want ErrInvalidEvent", err)
	}
}

func TestPanicWithOwnEventQueued(t *testing.T) {
	// A drainer whose own event is still queued behind a backlog when a
	// callback panics: that event loses its owner, so on the next drain its
	// error goes to OnError instead of being mistaken for the new caller's.
	var rec recorder
	var m *fsm.Machine[connState, connEvent, connData]
	opts := rec.options()
	entered := map[connState]int{}
	opts.OnEnter = map[connState]func(context.Context, step){
		"connecting": func(ctx context.Context, _ step) {
			if entered["connecting"]++; entered["connecting"] == 1 {
				_ = m.Fire(ctx, "established")
				panic("boom1")
			}
		},
		"connected": func(context.Context, step) {
			if entered["connected"]++; entered["connected"] == 1 {
				panic("boom2")
			}
		},
	}
	m = mustNew(t, connSpec(), opts)
	mustPanic := func(ev connEvent, want string) {
		t.Helper()
		defer func() {
			if r := recover(); r != want {
				t.Errorf("Fire(%s) recovered %v, want %s", ev, r, want)
			}
		}()
		_ = m.Fire(t.Context(), ev)
	}
	mustPanic("dial", "boom1")  // queue left: [established]
	mustPanic("retry", "boom2") // established panics; queue left: [retry]
	if err := m.Fire(t.Context(), "ping"); err != nil {
		t.Fatalf("Fire(ping) = %v, want nil (retry's error is not ours)", err)
	}
	var ee *fsm.EventError
	if len(rec.errs) != 1 || !errors.As(rec.errs[0], &ee) || ee.Event != "retry" || ee.State != "connected" {
		t.Fatalf("OnError got %v, want retry not permitted in connected", rec.errs)
	}
	if m.State() != "connected" {
		t.Errorf("State() = %s, want connected", m.State())
	}
}

func TestConcurrentFire(t *testing.T) {
	const goroutines, perG = 16, 200
	spec := connSpec()
	var (
		rec      recorder
		onErr    atomic.Int64
		returned atomic.Int64
	)
	opts := rec.options()
	opts.OnError = func(connEvent, error) { onErr.Add(1) }
	m := mustNew(t, spec, opts)

	cycle := []connEvent{"dial", "established", "ping", "drop", "retry", "established", "drop", "retry"}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				ev := cycle[(g+i)%len(cycle)]
				err := m.Fire(context.Background(), ev)
				switch {
				case err == nil:
				case errors.Is(err, fsm.ErrInvalidEvent):
					returned.Add(1)
				default:
					t.Errorf("Fire(%s): unexpected error %v", ev, err)
				}
				_ = m.State()
				_ = m.Can(ev)
				_ = m.Available()
			}
		})
	}
	wg.Wait()

	// Every Fire is accounted for exactly once: a step, a returned error or
	// an OnError report.
	total := int64(len(rec.steps)) + returned.Load() + onErr.Load()
	if total != goroutines*perG {
		t.Errorf("steps %d + returned errors %d + OnError %d = %d, want %d",
			len(rec.steps), returned.Load(), onErr.Load(), total, goroutines*perG)
	}
	cur := spec.Initial
	for i, st := range rec.steps {
		if st.From != cur || !slices.Equal(spec.Targets(cur)[st.Event], []connState{st.To}) {
			t.Fatalf("step %d %+v does not follow from state %s", i, st, cur)
		}
		cur = st.To
	}
	if m.State() != cur {
		t.Errorf("State() = %s, want %s (end of observed path)", m.State(), cur)
	}
}
