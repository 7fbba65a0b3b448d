package fsm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
)

type (
	nestState string
	nestEvent string
	// nestData is what the nested table's events carry, for its guards.
	nestData struct{ Released, Bad, Gone bool }
)

// nestSpec is a connection with superstates: live holds everything but
// the shutdown, up the two states of a working session, waiting the
// states Reconnect leaves. It exercises transitions into superstates,
// from superstates, a child's override (exhausted's dispose) and a
// child's guard falling through to its parent's (established's check).
func nestSpec() fsm.Spec[nestState, nestEvent, nestData] {
	type T = fsm.Transition[nestState, nestEvent, nestData]
	from := func(s ...nestState) []nestState { return s }
	return fsm.Spec[nestState, nestEvent, nestData]{
		Name:    "nested",
		Initial: "live",
		States: []fsm.State[nestState]{
			{Name: "live", Doc: "supervised", Initial: "connecting"},
			{Name: "connecting", Parent: "live", Doc: "dialling"},
			{Name: "up", Parent: "live", Initial: "established", Doc: "session up"},
			{Name: "established", Parent: "up"},
			{Name: "degraded", Parent: "up", Alarm: true},
			{Name: "waiting", Parent: "live", Initial: "backoff", Doc: "Reconnect leaves it", Alarm: true},
			{Name: "backoff", Parent: "waiting"},
			{Name: "exhausted", Parent: "waiting", Alarm: true},
			{Name: "halted", Parent: "live", Alarm: true},
			{Name: "disposing"},
			{Name: "disposed", Terminal: true},
		},
		Events: []fsm.Event[nestEvent]{
			{Name: "connected"}, {Name: "fail"}, {Name: "check"}, {Name: "lost"}, {Name: "retry"},
			{Name: "give-up"}, {Name: "reconnect"}, {Name: "dispose"}, {Name: "disposed"},
		},
		Transitions: []T{
			{Event: "connected", From: from("connecting"), To: "up"},
			{Event: "fail", From: from("connecting"), To: "halted", Guard: func(d nestData) bool { return !d.Released }, When: "not released"},
			{Event: "fail", From: from("connecting"), To: "backoff"},
			{Event: "check", From: from("established"), To: "degraded", Guard: func(d nestData) bool { return d.Bad }, When: "bad"},
			{Event: "check", From: from("up"), To: "established"},
			{Event: "lost", From: from("up"), To: "waiting"},
			{Event: "retry", From: from("backoff"), To: "connecting"},
			{Event: "give-up", From: from("backoff"), To: "exhausted"},
			{Event: "reconnect", From: from("waiting"), To: "connecting"},
			{Event: "reconnect", From: from("halted"), To: "connecting", Guard: func(d nestData) bool { return d.Gone }, When: "process gone"},
			{Event: "dispose", From: from("live"), To: "disposing"},
			{Event: "dispose", From: from("exhausted"), To: "disposed"},
			{Event: "disposed", From: from("disposing"), To: "disposed"},
		},
	}
}

// callLog records, in order, every callback as "exit:STATE" or
// "enter:STATE", and every step the observer sees as "step:FROM>TO".
type callLog []string

func (l *callLog) options(states []fsm.State[nestState]) fsm.Options[nestState, nestEvent, nestData] {
	type cb = func(context.Context, fsm.Step[nestState, nestEvent, nestData])
	o := fsm.Options[nestState, nestEvent, nestData]{OnEnter: map[nestState]cb{}, OnExit: map[nestState]cb{}}
	for _, st := range states {
		name := st.Name
		o.OnEnter[name] = func(context.Context, fsm.Step[nestState, nestEvent, nestData]) {
			*l = append(*l, "enter:"+string(name))
		}
		o.OnExit[name] = func(context.Context, fsm.Step[nestState, nestEvent, nestData]) { *l = append(*l, "exit:"+string(name)) }
	}
	o.Observer = func(st fsm.Step[nestState, nestEvent, nestData]) {
		*l = append(*l, "step:"+string(st.From)+">"+string(st.To))
	}
	return o
}

// TestNestedCallbacks: each transition leaves the states below the
// innermost superstate holding both ends, innermost first, and enters
// the target's, outermost first, each once; a self-transition leaves and
// enters the leaf alone.
func TestNestedCallbacks(t *testing.T) {
	spec := nestSpec()
	var log callLog
	m := mustNew(t, spec, log.options(spec.States))
	if got := m.State(); got != "connecting" {
		t.Fatalf("starts in %q, want connecting, the Initial of live", got)
	}
	ctx := context.Background()
	steps := []struct {
		ev   nestEvent
		data nestData
		want []string
	}{
		{"connected", nestData{}, []string{"exit:connecting", "enter:up", "enter:established", "step:connecting>established"}},
		{"check", nestData{Bad: true}, []string{"exit:established", "enter:degraded", "step:established>degraded"}},
		{"check", nestData{}, []string{"exit:degraded", "enter:established", "step:degraded>established"}},
		// established's own guard refuses; up's check is a self-transition here.
		{"check", nestData{}, []string{"exit:established", "enter:established", "step:established>established"}},
		{"lost", nestData{}, []string{"exit:established", "exit:up", "enter:waiting", "enter:backoff", "step:established>backoff"}},
		{"give-up", nestData{}, []string{"exit:backoff", "enter:exhausted", "step:backoff>exhausted"}},
		// exhausted's own dispose wins over live's.
		{"dispose", nestData{}, []string{"exit:exhausted", "exit:waiting", "exit:live", "enter:disposed", "step:exhausted>disposed"}},
	}
	for i, s := range steps {
		log = nil
		if err := m.FireWith(ctx, s.ev, s.data); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.ev, err)
		}
		if diff := cmp.Diff(s.want, []string(log)); diff != "" {
			t.Errorf("step %d (%s): callbacks (-want +got):\n%s", i, s.ev, diff)
		}
	}

	m = mustNew(t, spec, log.options(spec.States))
	log = nil
	if err := m.Fire(ctx, "dispose"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"exit:connecting", "exit:live", "enter:disposing", "step:connecting>disposing"}, []string(log)); diff != "" {
		t.Errorf("dispose from connecting (-want +got):\n%s", diff)
	}
}

// TestNestedIn: In names the leaf and every superstate around it.
func TestNestedIn(t *testing.T) {
	m := mustNew(t, nestSpec(), fsm.Options[nestState, nestEvent, nestData]{})
	ctx := context.Background()
	check := func(want map[nestState]bool) {
		t.Helper()
		for st, in := range want {
			if got := m.In(st); got != in {
				t.Errorf("in %s: In(%q) = %v, want %v", m.State(), st, got, in)
			}
		}
	}
	check(map[nestState]bool{"connecting": true, "live": true, "up": false, "disposing": false, "nope": false})
	_ = m.Fire(ctx, "connected")
	check(map[nestState]bool{"established": true, "up": true, "live": true, "connecting": false, "waiting": false})
	m.Rest()
	check(map[nestState]bool{"established": true, "up": true, "live": true, "degraded": false})
	_ = m.Fire(ctx, "dispose")
	check(map[nestState]bool{"disposing": true, "live": false, "up": false})
}

// TestNestedRefusal: a guard of a child with no fallback anywhere up its
// chain refuses the event and names the guard; an event no level of the
// chain handles lists what the leaf permits, its superstates' events
// included.
func TestNestedRefusal(t *testing.T) {
	m := mustNew(t, nestSpec(), fsm.Options[nestState, nestEvent, nestData]{})
	ctx := context.Background()
	_ = m.FireWith(ctx, "fail", nestData{Released: false})
	if m.State() != "halted" {
		t.Fatalf("in %s, want halted", m.State())
	}
	err := m.Fire(ctx, "reconnect")
	var ee *fsm.EventError
	if !errors.As(err, &ee) {
		t.Fatalf("reconnect from halted with the process alive: %v, want an EventError", err)
	}
	if diff := cmp.Diff([]string{"process gone"}, ee.Guards); diff != "" {
		t.Errorf("guards tried (-want +got):\n%s", diff)
	}
	err = m.Fire(ctx, "retry")
	if !errors.As(err, &ee) {
		t.Fatalf("retry from halted: %v, want an EventError", err)
	}
	if diff := cmp.Diff([]string{"dispose", "reconnect"}, ee.Permitted); diff != "" {
		t.Errorf("permitted in halted (-want +got):\n%s", diff)
	}
	if !m.Can("dispose") || m.Can("retry") {
		t.Errorf("Can(dispose) = %v, Can(retry) = %v in halted; want true, false", m.Can("dispose"), m.Can("retry"))
	}
	if err := m.FireWith(ctx, "reconnect", nestData{Gone: true}); err != nil || m.State() != "connecting" {
		t.Errorf("reconnect with the process gone: %v, in %s; want connecting", err, m.State())
	}
}

// TestNestedFlatten: superstates' transitions reach every leaf inside
// them, after the leaf's own, cut off after the first unguarded one.
func TestNestedFlatten(t *testing.T) {
	spec := nestSpec()
	type E = fsm.Edge[nestState, nestEvent]
	var got []E
	for _, e := range spec.Flatten() {
		if e.From == "established" || e.From == "exhausted" {
			got = append(got, e)
		}
	}
	want := []E{
		{From: "established", Event: "check", When: "bad", To: "degraded", Source: "established", Target: "degraded", Transition: 3},
		{From: "established", Event: "check", To: "established", Source: "up", Target: "established", Transition: 4},
		{From: "established", Event: "dispose", To: "disposing", Source: "live", Target: "disposing", Transition: 10},
		{From: "established", Event: "lost", To: "backoff", Source: "up", Target: "waiting", Transition: 5},
		{From: "exhausted", Event: "dispose", To: "disposed", Source: "exhausted", Target: "disposed", Transition: 11},
		{From: "exhausted", Event: "reconnect", To: "connecting", Source: "waiting", Target: "connecting", Transition: 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Flatten (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[nestEvent][]nestState{"check": {"degraded", "established"}, "dispose": {"disposing"}, "lost": {"backoff"}}, spec.Targets("established")); diff != "" {
		t.Errorf("Targets(established) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]nestState{"backoff", "connecting", "degraded", "disposed", "disposing", "established", "exhausted", "halted"}, spec.Leaves()); diff != "" {
		t.Errorf("Leaves (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]nestState{"up", "live"}, spec.Ancestors("degraded")); diff != "" {
		t.Errorf("Ancestors(degraded) (-want +got):\n%s", diff)
	}
	if spec.Leaf("live") != "connecting" || spec.Leaf("up") != "established" || spec.Leaf("halted") != "halted" {
		t.Errorf("Leaf: live %s, up %s, halted %s", spec.Leaf("live"), spec.Leaf("up"), spec.Leaf("halted"))
	}
	if !spec.Superstate("up") || spec.Superstate("established") || !spec.Contains("live", "degraded") || spec.Contains("up", "backoff") {
		t.Error("Superstate or Contains disagrees with the declared Parents")
	}
}

// TestNestedNewIn: a machine is never in a superstate; callbacks may be
// keyed by one.
func TestNestedNewIn(t *testing.T) {
	c, err := fsm.Compile(nestSpec())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.NewIn("up", fsm.Options[nestState, nestEvent, nestData]{})
	if !errors.Is(err, fsm.ErrInvalidSpec) || !strings.Contains(err.Error(), `NewIn("up"): is a superstate`) {
		t.Errorf("NewIn(up) = %v, want a SpecError naming the superstate", err)
	}
	m, err := c.NewIn("degraded", fsm.Options[nestState, nestEvent, nestData]{})
	if err != nil || !m.In("up") {
		t.Errorf("NewIn(degraded): %v", err)
	}
}

func TestNestedDiagramGolden(t *testing.T) {
	s := nestSpec()
	taken := fsm.Overlay[nestState]{
		Highlight: []nestState{"degraded", "waiting"},
		Taken: map[fsm.DrawnEdge[nestState]]int{
			{From: "connecting", To: "up", Label: "connected"}: 2,
			{From: "live", To: "disposing", Label: "dispose"}:  1,
		},
	}
	for _, tt := range []struct{ file, got string }{
		{"nested.dot.golden", s.DOT()},
		{"nested.mmd.golden", s.Mermaid()},
		{"nested_overlay.dot.golden", s.DOTOverlay(taken)},
		{"nested_overlay.mmd.golden", s.MermaidOverlay(taken)},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(path, []byte(tt.got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), tt.got); diff != "" {
				t.Errorf("%s mismatch (-golden +got); run go test -update if intended:\n%s", path, diff)
			}
		})
	}
}

// TestNestedValidate: every hole nesting allows is rejected, naming the
// entry and the fix.
func TestNestedValidate(t *testing.T) {
	type T = fsm.Transition[nestState, nestEvent, nestData]
	gone := func(d nestData) bool { return d.Gone }
	state := func(s *fsm.Spec[nestState, nestEvent, nestData], name nestState) *fsm.State[nestState] {
		for i := range s.States {
			if s.States[i].Name == name {
				return &s.States[i]
			}
		}
		t.Fatalf("no state %q", name)
		return nil
	}
	tests := []struct {
		name   string
		change func(s *fsm.Spec[nestState, nestEvent, nestData])
		want   string
	}{
		{"unknown parent", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "halted").Parent = "nope" },
			`States[8] "halted": Parent "nope" is not a declared state`},
		{"parent cycle", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "live").Parent = "degraded" },
			`States[0] "live": its Parent chain loops (live -> degraded -> up -> live)`},
		{"self parent", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "halted").Parent = "halted" },
			`States[8] "halted": its Parent chain loops (halted -> halted)`},
		{"initial on a leaf", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "halted").Initial = "connecting" },
			`States[8] "halted": has Initial "connecting" but no state names it as Parent`},
		{"initial outside", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "up").Initial = "backoff" },
			`States[2] "up": Initial "backoff" is not inside it`},
		{"initial itself", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "up").Initial = "up" },
			`States[2] "up": Initial "up" is not inside it`},
		{"initial undeclared", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "up").Initial = "nope" },
			`States[2] "up": Initial "nope" is not a declared state`},
		{"initial superstate without initial", func(s *fsm.Spec[nestState, nestEvent, nestData]) {
			state(s, "live").Initial = "up"
			state(s, "up").Initial = ""
			s.Transitions[0].To = "established"
		}, `States[0] "live": Initial "up" is a superstate without an Initial of its own`},
		{"spec initial superstate without initial", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "live").Initial = "" },
			`Initial "live": is a superstate without an Initial child`},
		{"edge into superstate without initial", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "waiting").Initial = "" },
			`Transitions[5] (event "lost"): targets superstate "waiting", which has no Initial child`},
		{"initial nothing enters", func(s *fsm.Spec[nestState, nestEvent, nestData]) { s.Transitions[5].To = "backoff" },
			`States[5] "waiting": has Initial "backoff", but nothing enters "waiting" (no transition targets it, and it is neither the Spec's Initial nor the Initial of a superstate entered), so the diagrams would draw a way in that the machine never takes; drop the Initial`},
		{"terminal superstate", func(s *fsm.Spec[nestState, nestEvent, nestData]) { state(s, "up").Terminal = true },
			`States[2] "up": is a superstate ("degraded", "established" lie inside it) and Terminal`},
		{"terminal leaf under a superstate's edge", func(s *fsm.Spec[nestState, nestEvent, nestData]) {
			state(s, "disposed").Parent = "live"
		}, `Transitions[10] (event "dispose"): superstate "live"'s transition leaves terminal state "disposed" inside it`},
		{"guard named at two tried levels", func(s *fsm.Spec[nestState, nestEvent, nestData]) {
			s.Transitions = append(s.Transitions, T{Event: "reconnect", From: []nestState{"exhausted"}, To: "halted", Guard: gone, When: "process gone"})
			s.Transitions[8].Guard, s.Transitions[8].When = gone, "process gone"
			s.Transitions = append(s.Transitions, T{Event: "reconnect", From: []nestState{"waiting"}, To: "connecting"})
		}, `Transitions[8] (event "reconnect"): repeats the guard "process gone" of Transitions[13] (from "exhausted") for state "exhausted"`},
		{"child's unguarded edge hides a parent's guard", func(s *fsm.Spec[nestState, nestEvent, nestData]) {
			s.Transitions[8].Guard, s.Transitions[8].When = gone, "process gone"
			s.Transitions = append(s.Transitions,
				T{Event: "reconnect", From: []nestState{"waiting"}, To: "connecting"},
				T{Event: "reconnect", From: []nestState{"backoff"}, To: "connecting"})
		}, `Transitions[8] (event "reconnect"): guard "process gone" of superstate "waiting" is hidden from "backoff" by the unguarded Transitions[14] (from "backoff")`},
		{"superstate edge overridden everywhere", func(s *fsm.Spec[nestState, nestEvent, nestData]) {
			s.Transitions = append(s.Transitions, T{Event: "lost", From: []nestState{"established", "degraded"}, To: "halted"})
		}, `Transitions[5] (event "lost"): from superstate "up" is overridden by every state inside it, so it is never taken`},
		{"unreachable leaf", func(s *fsm.Spec[nestState, nestEvent, nestData]) {
			s.States = append(s.States, fsm.State[nestState]{Name: "spare", Parent: "up"})
		}, `States[11] "spare": is unreachable from initial state "live"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nestSpec()
			tt.change(&s)
			err := s.Validate()
			if !errors.Is(err, fsm.ErrInvalidSpec) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v\nwant an error containing %s", err, tt.want)
			}
		})
	}
	if err := nestSpec().Validate(); err != nil {
		t.Errorf("the nested table itself: %v", err)
	}

	// The same guard set on a child, ending with its own fallback, hides
	// its parent's arms without dropping an outcome: fine.
	s := nestSpec()
	s.Transitions[8].Guard, s.Transitions[8].When = gone, "process gone"
	s.Transitions = append(s.Transitions,
		T{Event: "reconnect", From: []nestState{"waiting"}, To: "connecting"},
		T{Event: "reconnect", From: []nestState{"backoff"}, To: "halted", Guard: gone, When: "process gone"},
		T{Event: "reconnect", From: []nestState{"backoff"}, To: "connecting"})
	if err := s.Validate(); err != nil {
		t.Errorf("a child repeating its parent's guard set: %v", err)
	}

	// A superstate entered only as its parent's Initial uses its Initial.
	s = nestSpec()
	state(&s, "live").Initial = "up"
	s.Transitions[0].To = "established"
	if err := s.Validate(); err != nil {
		t.Errorf("up entered as live's Initial: %v", err)
	}
}
