package fsm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
)

type (
	spec = fsm.Spec[connState, connEvent, connData]
	tr   = fsm.Transition[connState, connEvent, connData]
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(s *spec)
		want   string // "" means valid
	}{
		{"valid", func(*spec) {}, ""},
		{"empty name", func(s *spec) { s.Name = "" },
			`fsm: invalid spec "": Name: is empty; name the machine, it titles diagrams and errors`},
		{"empty state name", func(s *spec) { s.States[1].Name = "" },
			`fsm: invalid spec "conn": States[1]: has an empty name`},
		{"duplicate state", func(s *spec) { s.States[3].Name = "idle" },
			`fsm: invalid spec "conn": States[3] "idle": duplicates States[0]; declare each state once`},
		{"empty event name", func(s *spec) { s.Events[2].Name = "" },
			`fsm: invalid spec "conn": Events[2]: has an empty name`},
		{"duplicate event", func(s *spec) { s.Events[1].Name = "dial" },
			`fsm: invalid spec "conn": Events[1] "dial": duplicates Events[0]; declare each event once`},
		{"empty initial", func(s *spec) { s.Initial = "" },
			`fsm: invalid spec "conn": Initial: is empty; name the state the machine starts in`},
		{"undeclared initial", func(s *spec) { s.Initial = "nowhere" },
			`fsm: invalid spec "conn": Initial "nowhere": is not a declared state; add it to States`},
		{"empty transition event", func(s *spec) { s.Transitions[6].Event = "" },
			`fsm: invalid spec "conn": Transitions[6]: has an empty event name`},
		{"undeclared event", func(s *spec) { s.Transitions[6].Event = "pong" },
			`fsm: invalid spec "conn": Transitions[6] (event "pong"): event "pong" is not declared; add it to Events`},
		{"no from", func(s *spec) { s.Transitions[1].From = nil },
			`fsm: invalid spec "conn": Transitions[1] (event "established"): has no From state`},
		{"undeclared to", func(s *spec) { s.Transitions[0].To = "dialing" },
			`fsm: invalid spec "conn": Transitions[0] (event "dial"): target state "dialing" is not declared; add it to States`},
		{"undeclared from", func(s *spec) { s.Transitions[2].From = []connState{"connecting", "online"} },
			`fsm: invalid spec "conn": Transitions[2] (event "drop"): source state "online" is not declared; add it to States`},
		{"leaves terminal", func(s *spec) {
			s.Transitions = append(s.Transitions, tr{Event: "dial", From: []connState{"closed"}, To: "connecting"})
		}, `fsm: invalid spec "conn": Transitions[7] (event "dial"): leaves terminal state "closed"; terminal states have no outgoing transitions`},
		{"duplicate pair", func(s *spec) {
			s.Transitions = append(s.Transitions, tr{Event: "drop", From: []connState{"connected"}, To: "idle"})
		}, `fsm: invalid spec "conn": Transitions[7] (event "drop"): duplicates Transitions[2] for (from "connected", event "drop"); a (from, event) pair must have one target, or guards on all of its transitions but the last`},
		{"duplicate source in one transition", func(s *spec) { s.Transitions[5].From = []connState{"idle", "idle"} },
			`fsm: invalid spec "conn": Transitions[5] (event "close"): lists source state "idle" twice`},
		{"unused event", func(s *spec) { s.Events = append(s.Events, fsm.Event[connEvent]{Name: "reset"}) },
			`fsm: invalid spec "conn": Events[7] "reset": is never used by a transition; remove it or add a transition`},
		{"unreachable state", func(s *spec) { s.States = append(s.States, fsm.State[connState]{Name: "limbo"}) },
			`fsm: invalid spec "conn": States[5] "limbo": is unreachable from initial state "idle"`},
		{"reachable only via an unreachable state", func(s *spec) {
			s.States = append(s.States, fsm.State[connState]{Name: "a"}, fsm.State[connState]{Name: "b"})
			s.Events = append(s.Events, fsm.Event[connEvent]{Name: "hop"})
			s.Transitions = append(s.Transitions, tr{Event: "hop", From: []connState{"a"}, To: "b"})
		}, `fsm: invalid spec "conn": States[5] "a": is unreachable from initial state "idle"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := connSpec()
			tt.modify(&s)
			err := s.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Validate() error mismatch (-want +got):\n%s", diff)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, fsm.ErrInvalidSpec) {
				t.Errorf("errors.Is(err, ErrInvalidSpec) = false for %v", err)
			}
			var se *fsm.SpecError
			if !errors.As(err, &se) || se.Spec != s.Name {
				t.Errorf("errors.As(err, *SpecError) failed or wrong Spec: %#v", err)
			}
			if _, nerr := fsm.New(s, fsm.Options[connState, connEvent, connData]{}); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("New error = %v, want the Validate error", nerr)
			}
		})
	}
}

func TestNewRejectsUnknownOnEnterKey(t *testing.T) {
	_, err := fsm.New(connSpec(), fsm.Options[connState, connEvent, connData]{
		OnEnter: map[connState]func(ctx context.Context, st fsm.Step[connState, connEvent, connData]){"conected": nil},
	})
	want := `fsm: invalid spec "conn": Options.OnEnter["conected"]: is not a declared state; a callback keyed by it would never run`
	if err == nil || err.Error() != want || !errors.Is(err, fsm.ErrInvalidSpec) {
		t.Fatalf("New error = %v, want %s", err, want)
	}
}

func TestSpecLookups(t *testing.T) {
	s := connSpec()
	if st, ok := s.State("closed"); !ok || !st.Terminal {
		t.Errorf("State(closed) = %+v, %v", st, ok)
	}
	if _, ok := s.State("nope"); ok {
		t.Error("State(nope) found")
	}
	if ev, ok := s.Event("ping"); !ok || ev.Doc != "Keep-alive." {
		t.Errorf("Event(ping) = %+v, %v", ev, ok)
	}
	if diff := cmp.Diff(map[connEvent][]connState{"established": {"connected"}, "drop": {"failed-retrying"}}, s.Targets("connecting")); diff != "" {
		t.Errorf("Targets(connecting) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[connEvent][]connState{}, s.Targets("closed")); diff != "" {
		t.Errorf("Targets(closed) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]connState{"connected", "connecting"}, s.Sources("failed-retrying")); diff != "" {
		t.Errorf("Sources(failed-retrying) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]connState{"connected", "failed-retrying", "idle"}, s.Sources("closed")); diff != "" {
		t.Errorf("Sources(closed) (-want +got):\n%s", diff)
	}
	if got := s.Sources("idle"); len(got) != 0 {
		t.Errorf("Sources(idle) = %v, want none", got)
	}
}

func TestMachineSpecIsACopy(t *testing.T) {
	orig := connSpec()
	m := mustNew(t, orig, fsm.Options[connState, connEvent, connData]{})
	orig.Transitions[0].From[0] = "connected" // caller mutates its table afterwards
	got := m.Spec()
	got.States[0].Name = "mutated"
	if diff := cmp.Diff(connSpec(), m.Spec()); diff != "" {
		t.Errorf("Machine.Spec changed through aliasing (-want +got):\n%s", diff)
	}
}
