package metrics_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/metrics"
	"go.uber.org/goleak"
)

const okKey = "gen_ai.operation.name=execute_tool,gen_ai.tool.name=echo,mcp.method.name=tools/call,mcpfsm.call.outcome=ok,mcpfsm.server.name=fx"

var okCall = conn.CallRecord{Server: "fx", RawTool: "echo", Duration: time.Second, Outcome: conn.OutcomeOK}

// callCount is how many ok calls of echo a collection of s reads.
func callCount(t *testing.T, s sdk) uint64 {
	t.Helper()
	_, h := s.collect(t)
	got := h["mcp.client.operation.duration"][okKey]
	if float64(got.Count) != got.Sum {
		t.Errorf("count %d, sum %v: want one second a call", got.Count, got.Sum)
	}
	return got.Count
}

// Calls are queued, yet a collection sees every call that ended before
// it: the SDK runs the Meter's callbacks, which record the queue, before
// it reads the histogram, and a collection waits for a full buffer that a
// goroutine is still recording. A single call, which only a collection
// records, is seen by the first collection; so are whole buffers handed to
// a goroutine just before it.
func TestCollectSeesEveryCall(t *testing.T) {
	c := metrics.PendingCap
	for _, n := range []int{1, c - 1, c, c + 1, 2 * c, 2*c + 1, 5*c + 3} {
		for round := range 10 { // a fresh race with the goroutine each time
			s, m := newMetrics(t)
			for range n {
				m.OnCall(okCall)
			}
			if got := callCount(t, s); got != uint64(n) {
				t.Fatalf("%d calls, round %d: the first collection read %d", n, round, got)
			}
			if got := callCount(t, s); got != uint64(n) {
				t.Fatalf("%d calls, round %d: the second collection read %d", n, round, got)
			}
		}
	}
}

// Calls that end on many goroutines while collections run: nothing is
// lost or counted twice, and the last collection reads them all.
func TestCollectConcurrentCalls(t *testing.T) {
	s, m := newMetrics(t)
	const workers, each = 4, 3*metrics.PendingCap + 5
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := m.Instrument(conn.Config{Name: "fx"})
			for i := range each {
				if w%2 == 0 {
					m.OnCall(okCall)
				} else {
					cfg.OnCall(okCall)
				}
				if i%100 == 0 {
					m.OnCall(conn.CallRecord{Server: fmt.Sprintf("s%d", w), RawTool: "echo", Duration: time.Second, Outcome: conn.OutcomeOK})
				}
			}
		}()
	}
	last := uint64(0)
	for range 20 {
		got := callCount(t, s)
		if got < last {
			t.Fatalf("a collection read %d calls after one read %d", got, last)
		}
		last = got
	}
	wg.Wait()
	if got := callCount(t, s); got != workers*each {
		t.Errorf("read %d calls, want %d", got, workers*each)
	}
	_, h := s.collect(t)
	for w := range workers {
		k := fmt.Sprintf("gen_ai.operation.name=execute_tool,gen_ai.tool.name=echo,mcp.method.name=tools/call,mcpfsm.call.outcome=ok,mcpfsm.server.name=s%d", w)
		if got, want := h["mcp.client.operation.duration"][k].Count, uint64((each+99)/100); got != want {
			t.Errorf("server s%d: %d calls, want %d", w, got, want)
		}
	}
}

// Close records the queued calls (its callback no longer runs after
// it), and a call that ends after Close is recorded at once.
func TestCloseRecordsQueued(t *testing.T) {
	s, m := newMetrics(t)
	for range 3 {
		m.OnCall(okCall)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := callCount(t, s); got != 3 {
		t.Errorf("after Close: %d calls, want 3", got)
	}
	m.OnCall(okCall)
	if got := callCount(t, s); got != 4 {
		t.Errorf("a call after Close: %d calls, want 4", got)
	}
}

// Queuing allocates nothing, including the buffers that fill and are
// handed to a goroutine (under the race detector, whose runtime allocates
// for a goroutine it starts, at most one allocation per buffer).
func TestQueueAllocs(t *testing.T) {
	_, m := newMetrics(t)
	on := m.Instrument(conn.Config{Name: "fx"}).OnCall
	on(okCall) // builds and caches the set
	metrics.Flush(m)
	calls := 20 * metrics.PendingCap
	limit := 0.0
	if raceEnabled {
		limit = float64(calls / metrics.PendingCap)
	}
	if n := testing.AllocsPerRun(5, func() {
		for range calls {
			on(okCall)
		}
	}); n > limit {
		t.Errorf("%v allocations per %d calls, want at most %v", n, calls, limit)
	}
}

// The goroutine that records a full queue ends with it: a Metrics whose
// calls have been recorded runs none.
func TestQueueLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	s, m := newMetrics(t)
	for range 3*metrics.PendingCap + 1 {
		m.OnCall(okCall)
	}
	if got := callCount(t, s); got != 3*metrics.PendingCap+1 {
		t.Errorf("read %d calls, want %d", got, 3*metrics.PendingCap+1)
	}
	goleak.VerifyNone(t, before)
}
