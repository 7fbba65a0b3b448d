package fsmtest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/fsmtest"
)

type (
	st   string
	ev   string
	data struct{ Released, Bad bool }
)

// nested is a small connection with superstates: live (connecting, up,
// waiting), up (established, degraded); dispose is declared once, from
// live, and overridden by backoff.
func nested() fsm.Spec[st, ev, data] {
	type T = fsm.Transition[st, ev, data]
	return fsm.Spec[st, ev, data]{
		Name:    "nested",
		Initial: "live",
		States: []fsm.State[st]{
			{Name: "live", Initial: "connecting"},
			{Name: "connecting", Parent: "live"},
			{Name: "up", Parent: "live", Initial: "established"},
			{Name: "established", Parent: "up"},
			{Name: "degraded", Parent: "up"},
			{Name: "backoff", Parent: "live"},
			{Name: "halted", Parent: "live"},
			{Name: "closed", Terminal: true},
		},
		Events: []fsm.Event[ev]{{Name: "connected"}, {Name: "fail"}, {Name: "check"}, {Name: "lost"}, {Name: "retry"}, {Name: "dispose"}},
		Transitions: []T{
			{Event: "connected", From: []st{"connecting"}, To: "up"},
			{Event: "fail", From: []st{"connecting"}, To: "halted", Guard: func(d data) bool { return !d.Released }, When: "not released"},
			{Event: "fail", From: []st{"connecting"}, To: "backoff"},
			{Event: "check", From: []st{"established"}, To: "degraded", Guard: func(d data) bool { return d.Bad }, When: "bad"},
			{Event: "check", From: []st{"up"}, To: "established"},
			{Event: "lost", From: []st{"up"}, To: "backoff"},
			{Event: "retry", From: []st{"backoff"}, To: "connecting"},
			{Event: "dispose", From: []st{"live"}, To: "closed"},
			{Event: "dispose", From: []st{"backoff"}, To: "closed"},
		},
	}
}

// choose returns the data that makes exactly the step's guard the first
// to accept: nested's guards are "not released" and "bad".
func choose(s fsmtest.Step[st, ev]) data {
	return data{Released: s.When != "not released", Bad: s.When == "bad"}
}

func TestPaths(t *testing.T) {
	spec := nested()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, p := range fsmtest.Paths(spec) {
		var steps []string
		for _, s := range p.Steps {
			steps = append(steps, fmt.Sprintf("%s %s[%s] %s", s.From, s.Event, s.When, s.To))
		}
		got[p.Target.String()] = steps
	}
	want := map[string][]string{
		"connecting --connected--> up":               {"connecting connected[] established"},
		"connecting --fail [not released]--> halted": {"connecting fail[not released] halted"},
		"connecting --fail--> backoff":               {"connecting fail[] backoff"},
		"established --check [bad]--> degraded":      {"connecting connected[] established", "established check[bad] degraded"},
		"up --check--> established":                  {"connecting connected[] established", "established check[] established"},
		"up --lost--> backoff":                       {"connecting connected[] established", "established lost[] backoff"},
		"backoff --retry--> connecting":              {"connecting fail[] backoff", "backoff retry[] connecting"},
		"live --dispose--> closed":                   {"connecting dispose[] closed"},
		"backoff --dispose--> closed":                {"connecting fail[] backoff", "backoff dispose[] closed"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Paths (-want +got):\n%s", diff)
	}
}

// TestDriveCovers: replaying every path on the machine, with the data
// each guard needs, takes every target.
func TestDriveCovers(t *testing.T) {
	spec := nested()
	c := fsmtest.Drive(t, spec, fsmtest.Replay(spec, fsm.Options[st, ev, data]{}, choose))
	if got, want := c.String(), "fsm coverage nested: 9/9 edges, 9/9 branches (100%)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if c.Percent() != 100 || len(c.Missing()) != 0 || c.Err() != nil {
		t.Errorf("Percent %v, Missing %v, Err %v", c.Percent(), c.Missing(), c.Err())
	}
}

// fakeTB records what Drive reports, so a test can see it fail.
type fakeTB struct {
	testing.TB
	errors []string
}

func (f *fakeTB) Helper()             {}
func (f *fakeTB) Logf(string, ...any) {}
func (f *fakeTB) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}

// TestDriveFailsOnUnreachedBranch: a guard no data satisfies makes its
// branch unreached, and Drive fails naming it; the others are covered.
func TestDriveFailsOnUnreachedBranch(t *testing.T) {
	spec := nested()
	spec.Transitions[3].Guard = func(data) bool { return false } // "bad" never holds
	var tb fakeTB
	c := fsmtest.Drive(&tb, spec, fsmtest.Replay(spec, fsm.Options[st, ev, data]{}, choose))
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "not reached: established --check [bad]--> degraded") {
		t.Fatalf("Drive reported %q, want one failure naming the [bad] branch", tb.errors)
	}
	if !strings.Contains(tb.errors[0], "fsm coverage nested: 8/9 edges, 8/9 branches (88.9%)") {
		t.Errorf("failure does not start with the coverage line: %q", tb.errors[0])
	}
	want := []fsmtest.Target[st, ev]{{From: "established", Event: "check", When: "bad", To: "degraded", Transition: 3}}
	if diff := cmp.Diff(want, c.Missing()); diff != "" {
		t.Errorf("Missing (-want +got):\n%s", diff)
	}
}

// TestDriveFailsOnUnreachableTarget: a branch no path reaches (its state
// is unreachable) is reported as unreachable, whatever the driver does.
func TestDriveFailsOnUnreachableTarget(t *testing.T) {
	spec := nested()
	spec.States = append(spec.States, fsm.State[st]{Name: "orphan"})
	spec.Transitions = append(spec.Transitions, fsm.Transition[st, ev, data]{
		Event: "retry", From: []st{"orphan"}, To: "connecting", Guard: func(data) bool { return true }, When: "ever"})
	var tb fakeTB
	c := fsmtest.Drive(&tb, spec, fsmtest.Replay(spec, fsm.Options[st, ev, data]{}, choose))
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "unreachable: orphan --retry [ever]--> connecting (no path from the initial state takes it)") {
		t.Fatalf("Drive reported %q, want one failure naming the unreachable branch", tb.errors)
	}
	if diff := cmp.Diff([]fsmtest.Target[st, ev]{{From: "orphan", Event: "retry", When: "ever", To: "connecting", Transition: 9}}, c.Unreachable()); diff != "" {
		t.Errorf("Unreachable (-want +got):\n%s", diff)
	}
}

// TestCoverageStray: a step that is no edge of the table is not counted
// and is named by Err.
func TestCoverageStray(t *testing.T) {
	c := fsmtest.NewCoverage(nested())
	if c.Hit(fsmtest.Step[st, ev]{From: "closed", Event: "retry", To: "connecting"}) {
		t.Error("Hit accepted a step from the terminal state")
	}
	if !c.Hit(fsmtest.Step[st, ev]{From: "degraded", Event: "dispose", To: "closed"}) {
		t.Error("Hit refused dispose from degraded, which live's transition covers")
	}
	err := c.Err()
	if err == nil || !strings.Contains(err.Error(), "not an edge: closed --retry []--> connecting") || !strings.Contains(err.Error(), "1/9 branches") {
		t.Errorf("Err() = %v", err)
	}
}
