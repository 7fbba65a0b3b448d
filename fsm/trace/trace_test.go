package trace_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
)

type (
	st string
	ev string
)

// spec: live (connecting, up, backoff) with dispose declared once from
// live; attempt failures guarded.
func spec() fsm.Spec[st, ev, bool] {
	return fsm.Spec[st, ev, bool]{
		Name:    "conn",
		Initial: "live",
		States: []fsm.State[st]{
			{Name: "live", Initial: "connecting"},
			{Name: "connecting", Parent: "live"},
			{Name: "up", Parent: "live"},
			{Name: "backoff", Parent: "live"},
			{Name: "halted", Parent: "live"},
			{Name: "disposed", Terminal: true},
		},
		Events: []fsm.Event[ev]{{Name: "connected"}, {Name: "failed"}, {Name: "lost"}, {Name: "retry"}, {Name: "dispose"}},
		Transitions: []fsm.Transition[st, ev, bool]{
			{Event: "connected", From: []st{"connecting"}, To: "up"},
			{Event: "failed", From: []st{"connecting"}, To: "halted", Guard: func(released bool) bool { return !released }, When: "not released"},
			{Event: "failed", From: []st{"connecting"}, To: "backoff"},
			{Event: "lost", From: []st{"up"}, To: "backoff"},
			{Event: "retry", From: []st{"backoff"}, To: "connecting"},
			{Event: "dispose", From: []st{"live"}, To: "disposed"},
		},
	}
}

const good = `{"time":"2026-07-28T10:00:00Z","machine":"a","from":"connecting","event":"connected","to":"up","extra":{"attempt":1,"generation":1}}
{"machine":"b","from":"connecting","event":"failed","when":"not released","to":"halted","extra":{"cause":"exit 1"}}

{"machine":"a","from":"up","event":"lost","to":"backoff","extra":{"delay":"1s"}}
{"machine":"a","from":"backoff","event":"retry","to":"connecting"}
{"machine":"b","from":"halted","event":"dispose","to":"disposed"}
{"machine":"a","from":"connecting","event":"connected","to":"up","extra":{"attempt":2,"generation":2}}
`

// before is good as lines were written before Step had Machine, When
// and Extra: "server", "guard", and the writer's fields at the top level.
const before = `{"time":"2026-07-28T10:00:00Z","server":"a","from":"connecting","event":"connected","to":"up","attempt":1,"generation":1}
{"server":"b","from":"connecting","event":"failed","guard":"not released","to":"halted","cause":"exit 1"}

{"server":"a","from":"up","event":"lost","to":"backoff","delay":"1s"}
{"server":"a","from":"backoff","event":"retry","to":"connecting"}
{"server":"b","from":"halted","event":"dispose","to":"disposed"}
{"server":"a","from":"connecting","event":"connected","to":"up","generation":2,"attempt":2}
`

func TestReadAndCheck(t *testing.T) {
	steps, err := trace.Read(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 6 || steps[2].Line != 4 || steps[0].Time != "2026-07-28T10:00:00Z" || steps[1].When != "not released" ||
		string(steps[2].Extra) != `{"delay":"1s"}` || steps[3].Extra != nil || string(steps[5].Extra) != `{"attempt":2,"generation":2}` {
		t.Fatalf("Read: %+v", steps)
	}
	if err := trace.Check(spec(), steps); err != nil {
		t.Fatalf("Check of a good trace: %v", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, trace.Machines(steps)); diff != "" {
		t.Errorf("Machines (-want +got):\n%s", diff)
	}
	if got := len(trace.ForMachine(steps, "a")); got != 4 {
		t.Errorf("ForMachine(a): %d steps, want 4", got)
	}

	var buf bytes.Buffer
	for _, s := range steps {
		if err := trace.Write(&buf, s); err != nil {
			t.Fatal(err)
		}
	}
	again, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		again[i].Line = steps[i].Line
	}
	if diff := cmp.Diff(steps, again); diff != "" {
		t.Errorf("Write then Read (-wrote +read):\n%s", diff)
	}
}

// TestReadsLinesWrittenBefore: a trace written before Machine, When and
// Extra reads as the same steps: server is the machine, guard the
// condition, the other members the extra.
func TestReadsLinesWrittenBefore(t *testing.T) {
	want, err := trace.Read(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	got, err := trace.Read(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read of the former lines (-now +before):\n%s", diff)
	}
	if _, err := trace.Read(strings.NewReader(`{"server":1,"from":"a","event":"e","to":"b"}`)); err == nil || !strings.Contains(err.Error(), `line 1: not a JSON object of a step: "server"`) {
		t.Errorf("a server that is no string: %v", err)
	}
}

// TestCheckNamesTheStep: each way a step can break the table is named,
// with its index and line.
func TestCheckNamesTheStep(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"unknown event from state", `{"machine":"b","from":"disposed","event":"connected","to":"up"}`, `step 7 (line 8): no edge "connected" from "disposed"`},
		{"wrong target", `{"machine":"a","from":"up","event":"lost","to":"halted"}`, `step 7 (line 8): edge "lost" from "up" leads to "backoff", not "halted"`},
		{"wrong guard", `{"machine":"a","from":"up","event":"lost","when":"budget spent","to":"backoff"}`, `step 7 (line 8): edge "lost" from "up" to "backoff" is taken with no guard, not guard "budget spent"`},
		{"missing guard", `{"machine":"c","from":"connecting","event":"failed","to":"halted"}`, `step 7 (line 8): edge "failed" from "connecting" to "halted" is taken with guard "not released", not without one`},
		{"broken chain", `{"machine":"a","from":"backoff","event":"retry","to":"connecting"}`, `step 7 (line 8): starts in "backoff", but step 6 of machine "a" ended in "up"`},
		{"superstate", `{"machine":"c","from":"live","event":"dispose","to":"disposed"}`, `step 7 (line 8): "live" is a superstate`},
		{"undeclared state", `{"machine":"c","from":"gone","event":"dispose","to":"disposed"}`, `step 7 (line 8): state "gone" is not declared in "conn"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := trace.Read(strings.NewReader(good + tt.line + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			err = trace.Check(spec(), steps)
			var te *trace.Error
			if !errors.Is(err, trace.ErrTrace) || !errors.As(err, &te) || te.Step != 7 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check = %v\nwant step 7: %s", err, tt.want)
			}
		})
	}
}

func TestReadNamesTheLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"{\"from\":\"a\",\"event\":\"e\",\"to\":\"b\"}\n\n{not json}\n", "line 3: not a JSON object of a step"},
		{"{\"from\":\"a\",\"event\":\"e\"}\n", `line 1: has no "to"`},
	} {
		_, err := trace.Read(strings.NewReader(tt.in))
		if !errors.Is(err, trace.ErrTrace) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%q) = %v, want %s", tt.in, err, tt.want)
		}
	}
}

// TestOverlay: a superstate's transition counts once per step, under
// the superstate, whichever leaf took it; each machine's last state is
// highlighted.
func TestOverlay(t *testing.T) {
	steps, err := trace.Read(strings.NewReader(good + `{"machine":"a","from":"up","event":"dispose","to":"disposed"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := trace.Overlay(spec(), steps)
	want := fsm.Overlay[st]{
		Highlight: []st{"disposed"},
		Taken: map[fsm.DrawnEdge[st]]int{
			{From: "connecting", To: "up", Label: "connected"}:                 2,
			{From: "connecting", To: "halted", Label: "failed [not released]"}: 1,
			{From: "up", To: "backoff", Label: "lost"}:                         1,
			{From: "backoff", To: "connecting", Label: "retry"}:                1,
			{From: "live", To: "disposed", Label: "dispose"}:                   2,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Overlay (-want +got):\n%s", diff)
	}
}
