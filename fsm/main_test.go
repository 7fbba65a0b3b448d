package fsm_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpfsm/mcpfsm/fsm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type (
	connState string
	connEvent string
	connData  = int // what the tests' events carry; only guards read it
)

// connSpec is the example table shared by the tests: a connection that
// dials, may fail and retry, pings itself while connected, and closes.
func connSpec() fsm.Spec[connState, connEvent, connData] {
	return fsm.Spec[connState, connEvent, connData]{
		Name:    "conn",
		Initial: "idle",
		States: []fsm.State[connState]{
			{Name: "idle", Doc: "Not connected; waiting for a dial."},
			{Name: "connecting", Doc: "Dialling the server."},
			{Name: "connected", Doc: "Session is up."},
			{Name: "failed-retrying", Doc: "Connection lost; backing off.", Alarm: true},
			{Name: "closed", Doc: "Shut down for good.", Terminal: true},
		},
		Events: []fsm.Event[connEvent]{
			{Name: "dial"}, {Name: "established"}, {Name: "drop"}, {Name: "retry"},
			{Name: "give_up"}, {Name: "close"}, {Name: "ping", Doc: "Keep-alive."},
		},
		Transitions: []fsm.Transition[connState, connEvent, connData]{
			{Event: "dial", From: []connState{"idle"}, To: "connecting"},
			{Event: "established", From: []connState{"connecting"}, To: "connected"},
			{Event: "drop", From: []connState{"connecting", "connected"}, To: "failed-retrying"},
			{Event: "retry", From: []connState{"failed-retrying"}, To: "connecting"},
			{Event: "give_up", From: []connState{"failed-retrying"}, To: "closed"},
			{Event: "close", From: []connState{"idle", "connected"}, To: "closed"},
			{Event: "ping", From: []connState{"connected"}, To: "connected"},
		},
	}
}

// recorder collects steps and queued errors. It needs no lock: Machine
// promises its callbacks never run concurrently, and -race checks that.
type recorder struct {
	steps []fsm.Step[connState, connEvent, connData]
	errs  []error
}

func (r *recorder) options() fsm.Options[connState, connEvent, connData] {
	return fsm.Options[connState, connEvent, connData]{
		Observer: func(st fsm.Step[connState, connEvent, connData]) { r.steps = append(r.steps, st) },
		OnError:  func(_ connEvent, err error) { r.errs = append(r.errs, err) },
	}
}

func mustNew[S ~string, E ~string, D any](t testing.TB, spec fsm.Spec[S, E, D], opts fsm.Options[S, E, D]) *fsm.Machine[S, E, D] {
	t.Helper()
	m, err := fsm.New(spec, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}
