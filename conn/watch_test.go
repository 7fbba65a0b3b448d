package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

const watchLimit = 10 * time.Second

// watched is what the watch tests compare of a transition.
type watched struct {
	From, To conn.State
	Event    conn.Event
	Attempt  int
	Dropped  int
}

func project(ts []conn.Transition) []watched {
	out := make([]watched, len(ts))
	for i, t := range ts {
		out[i] = watched{t.From, t.To, t.Event, t.Attempt, t.Dropped}
	}
	return out
}

// watchFixture is a supervisor on a mock clock that is established when
// the test starts (FailOnStartupError waits for it), so that no transition
// precedes the test's Watch.
type watchFixture struct {
	clk *clock.Mock
	srv *conntest.Server
	rec *conntest.Recorder
	sup *conn.Supervisor
}

func newWatchFixture(t *testing.T, maxAttempts int) *watchFixture {
	t.Helper()
	f := &watchFixture{clk: clock.NewMock(), srv: conntest.NewServer(), rec: conntest.NewRecorder()}
	f.srv.AddEchoTool("echo")
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: maxAttempts}
	f.sup = startEstablished(t, f.srv, f.rec, conn.Config{Reconnect: &p, Clock: f.clk})
	return f
}

// startEstablished starts a supervisor named fx of srv with cfg, on the
// recorder, and waits until it is established (FailOnStartupError), so no
// transition precedes what the test does next; the initial transition is
// read off the recorder. The supervisor and srv are closed at the end.
func startEstablished(t *testing.T, srv *conntest.Server, rec *conntest.Recorder, cfg conn.Config) *conn.Supervisor {
	t.Helper()
	cfg.Name, cfg.Transport, cfg.FailOnStartupError = "fx", srv.Transport(), true
	cfg.Logger, cfg.OnTransition = quiet(), rec.OnTransition
	if cfg.Registry == nil {
		cfg.Registry = conn.NewRegistry()
	}
	sup, err := conn.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), watchLimit)
		defer cancel()
		if err := sup.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		srv.Close()
	})
	rec.Expect(t, watchLimit, conn.Established)
	return sup
}

// outage crashes the server with refusals planned and runs n failed
// reconnect attempts: 1 + 2n transitions, each confirmed by the recorder.
func (f *watchFixture) outage(t *testing.T, n int) {
	t.Helper()
	f.srv.Plan(conntest.Refuse)
	f.srv.Crash()
	f.rec.Expect(t, watchLimit, conn.LostReconnecting)
	for range n {
		f.clk.Add(time.Second)
		f.rec.Expect(t, watchLimit, conn.Connecting, conn.FailedRetrying)
	}
}

func (f *watchFixture) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchLimit)
	defer cancel()
	if err := f.sup.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// drain receives until the channel is closed.
func drain(t *testing.T, ch <-chan conn.Transition) []conn.Transition {
	t.Helper()
	var out []conn.Transition
	deadline := time.After(watchLimit)
	for {
		select {
		case tr, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, tr)
		case <-deadline:
			t.Fatalf("channel not closed within %v; received %s", watchLimit, conntest.Path(out))
			return nil
		}
	}
}

func recv(t *testing.T, ch <-chan conn.Transition) conn.Transition {
	t.Helper()
	select {
	case tr, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed early")
		}
		return tr
	case <-time.After(watchLimit):
		t.Fatalf("no transition within %v", watchLimit)
		return conn.Transition{}
	}
}

func TestWatchDeliversInOrder(t *testing.T) {
	f := newWatchFixture(t, 5)
	ch := f.sup.Watch(context.Background())
	f.srv.Plan(conntest.Refuse, conntest.Accept)
	f.srv.Crash()
	f.rec.Expect(t, watchLimit, conn.LostReconnecting)
	f.clk.Add(time.Second)
	f.rec.Expect(t, watchLimit, conn.Connecting, conn.FailedRetrying)
	f.clk.Add(time.Second)
	f.rec.Expect(t, watchLimit, conn.Connecting, conn.Established)
	f.close(t)
	f.rec.Expect(t, watchLimit, conn.Disposing, conn.Disposed)

	got := drain(t, ch)
	want := f.rec.Seen()[1:] // from the loss on
	if diff := cmp.Diff(project(want), project(got)); diff != "" {
		t.Errorf("watched transitions (-OnTransition +Watch):\n%s", diff)
	}
	for i := range got {
		if !got[i].At.Equal(want[i].At) || got[i].Err != want[i].Err || got[i].Generation != want[i].Generation {
			t.Errorf("transition %d: Watch %+v, OnTransition %+v", i, got[i], want[i])
		}
	}
	if last := got[len(got)-1]; last.To != conn.Disposed {
		t.Errorf("last transition into %s, want %s", last.To, conn.Disposed)
	}
}

// A reader that reads nothing until more than WatchBuffer transitions
// passed loses the oldest ones, and the first transition it reads says
// how many.
func TestWatchSlowReaderLosesOldest(t *testing.T) {
	const lost = 11
	// 1 loss + 2 per failed attempt = WatchBuffer + lost transitions.
	attempts := (conn.WatchBuffer + lost - 1) / 2
	if 1+2*attempts != conn.WatchBuffer+lost {
		t.Fatalf("bad arithmetic: %d attempts make %d transitions", attempts, 1+2*attempts)
	}
	f := newWatchFixture(t, attempts+10)
	slow := f.sup.Watch(context.Background())
	fast := f.sup.Watch(context.Background())
	var fastGot []conn.Transition
	f.srv.Plan(conntest.Refuse)
	f.srv.Crash()
	fastGot = append(fastGot, recv(t, fast))
	for range attempts {
		f.clk.Add(time.Second)
		fastGot = append(fastGot, recv(t, fast), recv(t, fast))
	}
	all := f.rec.Expect(t, watchLimit, conn.LostReconnecting)
	for range attempts {
		all = append(all, f.rec.Expect(t, watchLimit, conn.Connecting, conn.FailedRetrying)...)
	}

	// The fast reader saw everything, with nothing dropped.
	if diff := cmp.Diff(project(all), project(fastGot)); diff != "" {
		t.Errorf("fast reader (-want +got):\n%s", diff)
	}

	// The slow reader holds the newest WatchBuffer; the first carries the
	// count of the lost ones.
	var slowGot []conn.Transition
	for range conn.WatchBuffer {
		slowGot = append(slowGot, recv(t, slow))
	}
	select {
	case tr := <-slow:
		t.Fatalf("more than WatchBuffer transitions buffered: %+v", tr)
	default:
	}
	want := project(all[lost:])
	want[0].Dropped = lost
	if diff := cmp.Diff(want, project(slowGot)); diff != "" {
		t.Errorf("slow reader (-want +got):\n%s", diff)
	}

	// Having caught up, it misses nothing more.
	f.close(t)
	rest := drain(t, slow)
	if diff := cmp.Diff([]watched{
		{conn.FailedRetrying, conn.Disposing, conn.EventDispose, 0, 0},
		{conn.Disposing, conn.Disposed, conn.EventDisposed, 0, 0},
	}, project(rest)); diff != "" {
		t.Errorf("after catching up (-want +got):\n%s", diff)
	}
}

// A reader racing the loop receives a subsequence of the transitions, in
// order, and the Dropped counts account for every one it did not receive.
func TestWatchConcurrentReaderAccountsForEveryTransition(t *testing.T) {
	const attempts = 150
	f := newWatchFixture(t, attempts+10)
	ch := f.sup.Watch(context.Background())
	type result struct {
		got []conn.Transition
	}
	done := make(chan result)
	go func() {
		var r result
		for tr := range ch {
			r.got = append(r.got, tr)
		}
		done <- r
	}()
	f.outage(t, attempts)
	f.close(t)
	f.rec.Expect(t, watchLimit, conn.Disposing, conn.Disposed)
	var r result
	select {
	case r = <-done:
	case <-time.After(watchLimit):
		t.Fatal("reader did not end")
	}
	all := f.rec.Seen()[1:]
	// Walk both: every received transition is the next one after skipping
	// exactly its Dropped count.
	i := 0
	for k, tr := range r.got {
		i += tr.Dropped
		if i >= len(all) {
			t.Fatalf("received %d: Dropped %d runs past the %d transitions", k, tr.Dropped, len(all))
		}
		if w := all[i]; w.From != tr.From || w.To != tr.To || !w.At.Equal(tr.At) {
			t.Fatalf("received %d (%s -> %s) is not transition %d (%s -> %s)", k, tr.From, tr.To, i, w.From, w.To)
		}
		i++
	}
	if i != len(all) {
		t.Errorf("received and dropped account for %d of %d transitions", i, len(all))
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	f := newWatchFixture(t, 5)
	ctx, cancel := context.WithCancel(context.Background())
	ended := f.sup.Watch(ctx)
	kept := f.sup.Watch(context.Background())
	cancel()
	if got := drain(t, ended); len(got) != 0 {
		t.Errorf("received %s after cancel, want nothing", conntest.Path(got))
	}
	// The supervisor goes on, and the other watcher still hears it.
	f.srv.Crash()
	if tr := recv(t, kept); tr.To != conn.LostReconnecting {
		t.Errorf("kept watcher: got -> %s, want -> %s", tr.To, conn.LostReconnecting)
	}

	// A context that has already ended gives a closed channel.
	if got := drain(t, f.sup.Watch(ctx)); len(got) != 0 {
		t.Errorf("Watch(ended ctx) received %s", conntest.Path(got))
	}
}

func TestWatchEndsAtDisposal(t *testing.T) {
	f := newWatchFixture(t, 5)
	ch := f.sup.Watch(context.Background())
	f.close(t)
	got := drain(t, ch)
	if diff := cmp.Diff([]watched{
		{conn.Established, conn.Disposing, conn.EventDispose, 0, 0},
		{conn.Disposing, conn.Disposed, conn.EventDisposed, 0, 0},
	}, project(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := drain(t, f.sup.Watch(context.Background())); len(got) != 0 {
		t.Errorf("Watch after disposal received %s", conntest.Path(got))
	}
}
