package fsm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/fsmtest"
)

type rec = fsmtest.Record[connState, connEvent]

var (
	fireEv = fsmtest.Fire[connEvent, connData]
	with   = fsmtest.With[connEvent, connData]
)

// guardedSpec is connSpec where a drop carries the number of drops so far:
// the third gives up instead of retrying.
func guardedSpec() fsm.Spec[connState, connEvent, connData] {
	s := connSpec()
	s.Transitions = append([]fsm.Transition[connState, connEvent, connData]{{
		Event: "drop", From: []connState{"connecting", "connected"}, To: "closed",
		Guard: func(drops int) bool { return drops >= 3 }, When: "third drop",
	}}, s.Transitions...)
	return s
}

func TestTrace(t *testing.T) {
	got, err := fsmtest.Run(connSpec(), fsm.Options[connState, connEvent, connData]{},
		fireEv("dial"), fireEv("ping"), fireEv("established"), fireEv("ping"), fireEv("close"), fireEv("dial"))
	if err != nil {
		t.Fatal(err)
	}
	want := []rec{
		{From: "idle", To: "connecting", Event: "dial"},
		{From: "connecting", Event: "ping", Err: `fsm "conn": event ping is not permitted in state connecting (permitted: drop, established)`},
		{From: "connecting", To: "connected", Event: "established"},
		{From: "connected", To: "connected", Event: "ping"},
		{From: "connected", To: "closed", Event: "close"},
		{From: "closed", Event: "dial", Err: `fsm "conn": event dial is not permitted in state closed (permitted: none)`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

func TestGuardsChooseTheTransition(t *testing.T) {
	var data []connData
	opts := fsm.Options[connState, connEvent, connData]{
		OnEnter: map[connState]func(context.Context, fsm.Step[connState, connEvent, connData]){
			"failed-retrying": func(_ context.Context, st fsm.Step[connState, connEvent, connData]) { data = append(data, st.Data) },
			"closed":          func(_ context.Context, st fsm.Step[connState, connEvent, connData]) { data = append(data, st.Data) },
		},
	}
	got, err := fsmtest.Run(guardedSpec(), opts,
		fireEv("dial"), with("drop", 1), fireEv("retry"), with("drop", 2), fireEv("retry"), with("drop", 3))
	if err != nil {
		t.Fatal(err)
	}
	want := []rec{
		{From: "idle", To: "connecting", Event: "dial"},
		{From: "connecting", To: "failed-retrying", Event: "drop"},
		{From: "failed-retrying", To: "connecting", Event: "retry"},
		{From: "connecting", To: "failed-retrying", Event: "drop"},
		{From: "failed-retrying", To: "connecting", Event: "retry"},
		{From: "connecting", To: "closed", Event: "drop", When: "third drop"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]connData{1, 2, 3}, data); diff != "" {
		t.Errorf("data seen by OnEnter (-want +got):\n%s", diff)
	}
}

func TestNoGuardAccepts(t *testing.T) {
	s := connSpec()
	for i := range s.Transitions {
		if s.Transitions[i].Event == "dial" {
			s.Transitions[i].Guard = func(n int) bool { return n > 0 }
			s.Transitions[i].When = "positive"
		}
	}
	m := mustNew(t, s, fsm.Options[connState, connEvent, connData]{})
	err := m.Fire(t.Context(), "dial")
	var ee *fsm.EventError
	if !errors.As(err, &ee) || !errors.Is(err, fsm.ErrInvalidEvent) {
		t.Fatalf("Fire = %v, want an *EventError", err)
	}
	want := `fsm "conn": event dial in state idle: no guard accepted its data (tried: positive)`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if m.State() != "idle" || !m.Can("dial") {
		t.Errorf("State %s, Can(dial) %v; want idle, true (Can does not consult guards)", m.State(), m.Can("dial"))
	}
	if err := m.FireWith(t.Context(), "dial", 1); err != nil || m.State() != "connecting" {
		t.Errorf("FireWith(dial, 1) = %v in %s, want nil in connecting", err, m.State())
	}
}

func TestValidateGuards(t *testing.T) {
	yes := func(int) bool { return true }
	tests := []struct {
		name string
		add  []fsm.Transition[connState, connEvent, connData]
		want string
	}{
		{"guard without when", []fsm.Transition[connState, connEvent, connData]{{Event: "dial", From: []connState{"idle"}, To: "closed", Guard: yes}},
			`fsm: invalid spec "conn": Transitions[7] (event "dial"): has a Guard but no When; name the condition, diagrams and errors show it`},
		{"when without guard", []fsm.Transition[connState, connEvent, connData]{{Event: "dial", From: []connState{"idle"}, To: "closed", When: "x"}},
			`fsm: invalid spec "conn": Transitions[7] (event "dial"): has When "x" but no Guard; add the Guard or drop the When`},
		{"guarded after unguarded", []fsm.Transition[connState, connEvent, connData]{{Event: "dial", From: []connState{"idle"}, To: "closed", Guard: yes, When: "x"}},
			`fsm: invalid spec "conn": Transitions[7] (event "dial"): duplicates Transitions[0] for (from "idle", event "dial"); a (from, event) pair must have one target, or guards on all of its transitions but the last`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := connSpec()
			s.Transitions = append(s.Transitions, tt.add...)
			err := s.Validate()
			if err == nil || err.Error() != tt.want || !errors.Is(err, fsm.ErrInvalidSpec) {
				t.Errorf("Validate = %v, want %s", err, tt.want)
			}
		})
	}
	t.Run("repeated when", func(t *testing.T) {
		s := guardedSpec()
		s.Transitions = append([]fsm.Transition[connState, connEvent, connData]{s.Transitions[0]}, s.Transitions...)
		want := `fsm: invalid spec "conn": Transitions[1] (event "drop"): repeats the guard "third drop" of Transitions[0] for (from "connecting", event "drop"); name each condition once`
		if err := s.Validate(); err == nil || err.Error() != want {
			t.Errorf("Validate = %v, want %s", err, want)
		}
	})
	if err := guardedSpec().Validate(); err != nil {
		t.Errorf("guardedSpec: %v", err)
	}
}

// TestExitCallbacks checks the order of one transition's callbacks, what
// State reports in each, and that a self-loop runs exit and entry again.
func TestExitCallbacks(t *testing.T) {
	var m *fsm.Machine[connState, connEvent, connData]
	var log []string
	note := func(what string) func(context.Context, fsm.Step[connState, connEvent, connData]) {
		return func(_ context.Context, st fsm.Step[connState, connEvent, connData]) {
			log = append(log, what+" "+string(st.From)+"->"+string(st.To)+" in "+string(m.State()))
		}
	}
	m = mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{
		OnExit:   map[connState]func(context.Context, fsm.Step[connState, connEvent, connData]){"connecting": note("exit"), "connected": note("exit")},
		OnEnter:  map[connState]func(context.Context, fsm.Step[connState, connEvent, connData]){"connected": note("enter")},
		Observer: func(st fsm.Step[connState, connEvent, connData]) { log = append(log, "observe "+string(st.Event)) },
	})
	fire(t, m, "dial", "established", "ping")
	want := []string{
		"observe dial",
		"exit connecting->connected in connecting", "enter connecting->connected in connected", "observe established",
		"exit connected->connected in connected", "enter connected->connected in connected", "observe ping",
	}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("callbacks (-want +got):\n%s", diff)
	}
}

func TestExitPanicLeavesState(t *testing.T) {
	var rec recorder
	opts := rec.options()
	opts.OnExit = map[connState]func(context.Context, fsm.Step[connState, connEvent, connData]){
		"idle": func(context.Context, fsm.Step[connState, connEvent, connData]) { panic("boom") },
	}
	m := mustNew(t, connSpec(), opts)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want boom", r)
			}
		}()
		_ = m.Fire(t.Context(), "dial")
	}()
	if m.State() != "idle" || len(rec.steps) != 0 {
		t.Fatalf("after a panicking exit: State %s, steps %v; want idle and none", m.State(), rec.steps)
	}
	if !m.Can("dial") {
		t.Error("Can(dial) = false: the engine is jammed")
	}
}

// TestCancelDuringTransition covers the context workaround: a context
// cancelled after Fire checked it (here by the exit callback) must not
// leave the looplab engine "in transition" for ever (looplab issue #115).
func TestCancelDuringTransition(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	m := mustNew(t, connSpec(), fsm.Options[connState, connEvent, connData]{
		OnExit: map[connState]func(context.Context, fsm.Step[connState, connEvent, connData]){
			"idle": func(context.Context, fsm.Step[connState, connEvent, connData]) { cancel() },
		},
	})
	if err := m.Fire(ctx, "dial"); err != nil {
		t.Fatalf("Fire(dial) = %v; the transition was already chosen", err)
	}
	if err := m.Fire(t.Context(), "established"); err != nil || m.State() != "connected" {
		t.Fatalf("Fire(established) = %v in %s: the engine is jammed", err, m.State())
	}
}
