package fsm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
)

type step = fsm.Step[connState, connEvent, connData]

func TestTransitions(t *testing.T) {
	tests := []struct {
		name      string
		events    []connEvent
		wantSteps []step
		wantState connState
		wantErr   string // error of the last event; "" for none
	}{
		{
			name:      "happy path",
			events:    []connEvent{"dial", "established", "close"},
			wantSteps: []step{{From: "idle", To: "connecting", Event: "dial"}, {From: "connecting", To: "connected", Event: "established"}, {From: "connected", To: "closed", Event: "close"}},
			wantState: "closed",
		},
		{
			name:   "drop and retry",
			events: []connEvent{"dial", "drop", "retry", "established", "drop", "give_up"},
			wantSteps: []step{
				{From: "idle", To: "connecting", Event: "dial"}, {From: "connecting", To: "failed-retrying", Event: "drop"}, {From: "failed-retrying", To: "connecting", Event: "retry"},
				{From: "connecting", To: "connected", Event: "established"}, {From: "connected", To: "failed-retrying", Event: "drop"}, {From: "failed-retrying", To: "closed", Event: "give_up"},
			},
			wantState: "closed",
		},
		{
			name:      "not permitted",
			events:    []connEvent{"established"},
			wantState: "idle",
			wantErr:   `fsm "conn": event established is not permitted in state idle (permitted: close, dial)`,
		},
		{
			name:      "nothing leaves terminal",
			events:    []connEvent{"close", "dial"},
			wantSteps: []step{{From: "idle", To: "closed", Event: "close"}},
			wantState: "closed",
			wantErr:   `fsm "conn": event dial is not permitted in state closed (permitted: none)`,
		},
		{
			name:      "undeclared event",
			events:    []connEvent{"dial", "explode"},
			wantSteps: []step{{From: "idle", To: "connecting", Event: "dial"}},
			wantState: "connecting",
			wantErr:   `fsm "conn": event explode is not permitted in state connecting (permitted: drop, established)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			m := mustNew(t, connSpec(), rec.options())
			var err error
			for i, ev := range tt.events {
				err = m.Fire(t.Context(), ev)
				if i < len(tt.events)-1 && err != nil {
					t.Fatalf("Fire(%s): %v", ev, err)
				}
			}
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, fsm.ErrInvalidEvent) {
					t.Errorf("error %v does not match ErrInvalidEvent", err)
				}
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSteps, rec.steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if got := m.State(); got != tt.wantState {
				t.Errorf("State() = %s, want %s", got, tt.wantState)
			}
		})
	}
}

func TestEventErrorFields(t *testing.T) {
	m := mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{})
	err := m.Fire(t.Context(), "ping")
	var ee *fsm.EventError
	if !errors.As(err, &ee) {
		t.Fatalf("Fire error %v is not an *EventError", err)
	}
	want := &fsm.EventError{Machine: "conn", Event: "ping", State: "idle", Permitted: []string{"close", "dial"}}
	if diff := cmp.Diff(want, ee); diff != "" {
		t.Errorf("EventError (-want +got):\n%s", diff)
	}
}

func TestCanAndAvailable(t *testing.T) {
	m := mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{})
	fire(t, m, "dial", "established")
	if diff := cmp.Diff([]connEvent{"close", "drop", "ping"}, m.Available()); diff != "" {
		t.Errorf("Available (-want +got):\n%s", diff)
	}
	for ev, want := range map[connEvent]bool{"close": true, "drop": true, "ping": true, "dial": false, "nope": false} {
		if got := m.Can(ev); got != want {
			t.Errorf("Can(%s) = %v, want %v", ev, got, want)
		}
	}
	fire(t, m, "close")
	if got := m.Available(); len(got) != 0 {
		t.Errorf("Available in terminal state = %v, want none", got)
	}
}

func fire(t *testing.T, m *fsm.Machine[connState, connEvent, connData], evs ...connEvent) {
	t.Helper()
	for _, ev := range evs {
		if err := m.Fire(t.Context(), ev); err != nil {
			t.Fatalf("Fire(%s): %v", ev, err)
		}
	}
}

func TestFireReentrant(t *testing.T) {
	var (
		rec    recorder
		m      *fsm.Machine[connState, connEvent, connData]
		during []connState // State() as seen inside callbacks
	)
	opts := rec.options()
	observe := opts.Observer
	opts.Observer = func(st step) {
		observe(st)
		during = append(during, m.State())
		if st.Event == "established" {
			// Fired from the Observer: queued behind the OnEnter-fired events.
			if err := m.Fire(context.Background(), "close"); err != nil {
				t.Errorf("re-entrant Fire from Observer returned %v, want nil", err)
			}
		}
	}
	opts.OnEnter = map[connState]func(context.Context, step){
		"connecting": func(ctx context.Context, _ step) {
			// Fired from OnEnter: queued, runs after this step's Observer.
			if err := m.Fire(ctx, "established"); err != nil {
				t.Errorf("re-entrant Fire returned %v, want nil", err)
			}
			if !m.Can("established") || m.Can("dial") {
				t.Error("Can from a callback answered for the wrong state")
			}
		},
		"connected": func(ctx context.Context, st step) {
			if st.Event != "established" {
				return
			}
			if err := m.Fire(ctx, "ping"); err != nil {
				t.Errorf("re-entrant Fire returned %v, want nil", err)
			}
			// Not permitted when its turn comes: must reach OnError.
			if err := m.Fire(ctx, "retry"); err != nil {
				t.Errorf("re-entrant Fire returned %v, want nil", err)
			}
		},
	}
	m = mustNew(t, connSpec(), opts)

	if err := m.Fire(t.Context(), "dial"); err != nil {
		t.Fatalf("Fire(dial): %v", err)
	}
	want := []step{
		{From: "idle", To: "connecting", Event: "dial"},
		{From: "connecting", To: "connected", Event: "established"},
		{From: "connected", To: "connected", Event: "ping"}, // queued by OnEnter(connected)
		// retry, queued next by OnEnter(connected), was not permitted
		{From: "connected", To: "closed", Event: "close"}, // queued by Observer, after OnEnter returned
	}
	if diff := cmp.Diff(want, rec.steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]connState{"connecting", "connected", "connected", "closed"}, during); diff != "" {
		t.Errorf("State() inside Observer (-want +got):\n%s", diff)
	}
	var ee *fsm.EventError
	if len(rec.errs) != 1 || !errors.As(rec.errs[0], &ee) || ee.Event != "retry" || ee.State != "connected" {
		t.Fatalf("OnError got %v, want retry not permitted in connected", rec.errs)
	}
	if m.State() != "closed" {
		t.Errorf("State() = %s, want closed", m.State())
	}
}

func TestFireCancelledContext(t *testing.T) {
	// Regression test for looplab #115: an event fired with a cancelled
	// context left the machine "in transition" forever.
	var rec recorder
	m := mustNew(t, connSpec(), rec.options())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := m.Fire(ctx, "dial")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fire with cancelled ctx = %v, want context.Canceled", err)
	}
	if m.State() != "idle" || len(rec.steps) != 0 {
		t.Fatalf("cancelled Fire changed state to %s / observed %v", m.State(), rec.steps)
	}

	cause := errors.New("operator gave up")
	ctx, cancelCause := context.WithCancelCause(t.Context())
	cancelCause(cause)
	if err := m.Fire(ctx, "dial"); !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("Fire with cancelled-with-cause ctx = %v, want Canceled and the cause", err)
	}

	type key struct{}
	live := context.WithValue(t.Context(), key{}, "v")
	var gotValue any
	m2 := mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{
		OnEnter: map[connState]func(context.Context, step){
			"connecting": func(ctx context.Context, _ step) { gotValue = ctx.Value(key{}) },
		},
	})
	for _, m := range []*fsm.Machine[connState, connEvent, connData]{m, m2} {
		if err := m.Fire(live, "dial"); err != nil {
			t.Fatalf("Fire after a cancelled Fire: %v", err)
		}
		if m.State() != "connecting" {
			t.Fatalf("State() = %s, want connecting", m.State())
		}
	}
	if gotValue != "v" {
		t.Errorf("OnEnter ctx value = %v, want the caller's", gotValue)
	}
}

func TestQueuedCancelledContextGoesToOnError(t *testing.T) {
	var rec recorder
	var m *fsm.Machine[connState, connEvent, connData]
	opts := rec.options()
	ctx, cancel := context.WithCancel(t.Context())
	opts.OnEnter = map[connState]func(context.Context, step){
		"connecting": func(context.Context, step) {
			_ = m.Fire(ctx, "established") // queued with a live ctx...
			cancel()                       // ...that ends before its turn
		},
	}
	m = mustNew(t, connSpec(), opts)
	fire(t, m, "dial")
	if len(rec.errs) != 1 || !errors.Is(rec.errs[0], context.Canceled) {
		t.Fatalf("OnError got %v, want one context.Canceled", rec.errs)
	}
	if m.State() != "connecting" {
		t.Errorf("State() = %s, want connecting", m.State())
	}
}

func TestSelfLoop(t *testing.T) {
	var rec recorder
	entered := 0
	opts := rec.options()
	opts.OnEnter = map[connState]func(context.Context, step){
		"connected": func(context.Context, step) { entered++ },
	}
	m := mustNew(t, connSpec(), opts)
	fire(t, m, "dial", "established", "ping", "ping")
	if entered != 3 {
		t.Errorf("OnEnter(connected) ran %d times, want 3 (enter + 2 self-loops)", entered)
	}
	want := []step{{From: "idle", To: "connecting", Event: "dial"}, {From: "connecting", To: "connected", Event: "established"},
		{From: "connected", To: "connected", Event: "ping"}, {From: "connected", To: "connected", Event: "ping"}}
	if diff := cmp.Diff(want, rec.steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	fire(t, m, "close") // the engine is not left mid-transition by the self-loops
}

func TestQueuedErrorLoggedWithoutOnError(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)

	var m *fsm.Machine[connState, connEvent, connData]
	m = mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{
		OnEnter: map[connState]func(context.Context, step){
			"connecting": func(ctx context.Context, _ step) { _ = m.Fire(ctx, "close") },
		},
	})
	fire(t, m, "dial")
	if got := buf.String(); !strings.Contains(got, "machine=conn event=close") || !strings.Contains(got, "not permitted in state connecting") {
		t.Errorf("log = %q, want the queued close rejection", got)
	}
}
