package sim

import (
	"strings"
	"testing"
	"time"
)

// clean is a history that keeps every promise: two clients, each with an
// instance of its own that closed in time, each seeing only its own.
func clean() *History {
	s := time.Second
	return &History{
		Now: 300 * s, Idle: 45 * s, Slack: 2 * s,
		Clients: map[string]*ClientRec{
			"c1": {Name: "c1", Ended: 100 * s},
			"c2": {Name: "c2", Modern: true, Ended: -1},
		},
		Sightings: []Sighting{
			{At: 10 * s, Client: "c1", Owner: "c1", What: "result", Detail: "c1#1|echo"},
			{At: 12 * s, Client: "c2", Owner: "c2", What: "elicitation", Detail: "for c2#2"},
		},
		Instances: []*InstanceRec{
			{ID: 1, Server: "a", Owner: "c1", Started: 5 * s, Closed: 101 * s, Served: map[string]time.Duration{"c1": 10 * s}},
			{ID: 2, Server: "a", Owner: "c2", Started: 11 * s, Closed: -1, Served: map[string]time.Duration{"c2": 290 * s}},
		},
		Requests: []*RequestRec{
			{ID: 1, Client: "c1", What: "a/echo", Start: 10 * s, Deadline: 15 * s, End: 10 * s},
			{ID: 2, Client: "c2", What: "a/ask", Start: 12 * s, Deadline: 72 * s, End: 72 * s},
		},
	}
}

// Each invariant holds on a clean history and fails on one that plants
// the bug it exists for, naming what broke it.
func TestInvariantsOnPlantedHistories(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		invariant string
		plant     func(h *History)
		want      string
	}{
		{"NoCrossClient", func(h *History) {
			// A bridge that forgot whose the call was: c1 read c2's result.
			h.Sightings = append(h.Sightings, Sighting{At: 20 * s, Client: "c1", Owner: "c2", What: "result", Detail: "c2#9|accept:c1"})
		}, "client c1 saw c2's result"},
		{"NoCrossClient", func(h *History) {
			// A roots read that answered c2's instance with c1's roots.
			h.Sightings = append(h.Sightings, Sighting{At: 20 * s, Client: "c2", Owner: "c1", What: "roots", Detail: "file:///c1/0"})
		}, "client c2 saw c1's roots"},
		{"InstanceServesOneClient", func(h *History) {
			// Instances keyed by server alone: c1's served c2.
			h.Instances[0].Served["c2"] = 50 * s
		}, `instance 1 of "a", started for c1, served a request of c2`},
		{"InstanceEndsWithClient", func(h *History) {
			// c1 ended at 100s; its instance still runs at 300s.
			h.Instances[0].Closed = -1
		}, "its client c1 ended at 100.000s"},
		{"InstanceEndsWithClient", func(h *History) {
			// c2 lives, but its instance has been idle since 200s.
			h.Instances[1].Served["c2"] = 200 * s
		}, "unused since 200.000s"},
		{"RequestsEndByDeadline", func(h *History) {
			// A wait that ignored the request's context.
			h.Requests[0].End = 40 * s
		}, "due by 15.000s, returned at 40.000s"},
		{"RequestsEndByDeadline", func(h *History) {
			h.Requests[1].End = -1
		}, "has not returned at 300.000s"},
		{"Progress", func(h *History) {
			h.Stalled = "goroutine 7 [sync.Mutex.Lock, synctest bubble 1]:\nfront.(*roots).known"
		}, "(*roots).known"},
		{"NoLeak", func(h *History) {
			h.Leaks = []string{"[select (durable), synctest bubble 1] bridge.(*Call).await"}
		}, "1 goroutines left"},
	} {
		t.Run(tc.invariant, func(t *testing.T) {
			h := clean()
			if v := Check(h); len(v) != 0 {
				t.Fatalf("the clean history breaks %v", v)
			}
			tc.plant(h)
			var got []string
			for _, v := range Check(h) {
				if v.Invariant != tc.invariant {
					t.Errorf("the planted history also breaks %v", v)
					continue
				}
				got = append(got, v.Detail)
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Errorf("%s on the planted history: %q, want one naming %q", tc.invariant, got, tc.want)
			}
		})
	}
}

// Every invariant says what class of bug it catches (docs/reliability.md
// lists them).
func TestInvariantsSayWhatTheyCatch(t *testing.T) {
	for _, inv := range Invariants {
		if inv.Name == "" || inv.Catches == "" || inv.Check == nil {
			t.Errorf("invariant %+v: name, class of bug and check are required", inv)
		}
	}
}

// Canonical sorts the lines of one instant and keeps the instants' order.
func TestCanonical(t *testing.T) {
	got := Canonical([]string{"1.000s b", "1.000s a", "2.000s c", "10.000s a", "2.000s b"})
	want := []string{"1.000s a", "1.000s b", "2.000s c", "10.000s a", "2.000s b"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Canonical = %q, want %q", got, want)
	}
}

// TestBusyTellsStarvedFromStuck: the stall watchdog's test of a dump. A
// run whose goroutines wait for a CPU is starved, not stuck; one whose
// goroutines all wait on locks is stuck, whatever another run's
// goroutines do.
func TestBusyTellsStarvedFromStuck(t *testing.T) {
	self := "goroutine 1 [running]:\nmain.watch()"
	stuck := "goroutine 7 [sync.Mutex.Lock, synctest bubble 3]:\nfront.(*client).update()"
	cases := []struct {
		name string
		dump string
		want bool
	}{
		{"all on locks", self + "\n\n" + stuck, false},
		{"another bubble runs", self + "\n\n" + stuck + "\n\ngoroutine 9 [runnable, synctest bubble 4]:\nx()", false},
		{"its own goroutine waits for a CPU", self + "\n\n" + stuck + "\n\ngoroutine 8 [runnable, synctest bubble 3]:\nx()", true},
		{"the runtime waits for a CPU", self + "\n\n" + stuck + "\n\ngoroutine 5 [runnable]:\nruntime.gcBgMarkWorker()", true},
		{"bubble 3 is not bubble 31", self + "\n\n" + stuck + "\n\ngoroutine 8 [runnable, synctest bubble 31]:\nx()", false},
	}
	for _, c := range cases {
		if got := busy(c.dump, "synctest bubble 3]"); got != c.want {
			t.Errorf("%s: busy = %v, want %v", c.name, got, c.want)
		}
	}
}
