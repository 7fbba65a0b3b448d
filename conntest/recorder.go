package conntest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/broadcast"
)

// T is the part of testing.TB the Recorder uses; *testing.T and
// *testing.B satisfy it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// LogLine is one captured log record, reduced to what tests compare.
type LogLine struct {
	Level slog.Level
	Msg   string
}

// Recorder captures a supervisor's transitions (pass OnTransition as
// Config.OnTransition) and log lines (pass Logger() as Config.Logger).
// Recording never blocks the supervisor, however many records the test
// leaves unread.
//
// Next, Expect and Await read transitions in the order they were
// recorded, from one cursor: each transition is read once, by whichever
// of them reaches it first, so they mix freely (an Await after a Next
// looks only at transitions after the one Next returned). All, Count and
// Dump look at every transition, read or not, and move no cursor.
type Recorder struct {
	mu      sync.Mutex
	unread  []conn.Transition // recorded, not yet read: the cursor of Next, Expect and Await
	seen    []conn.Transition // read, in order; seen then unread is every transition
	lines   []LogLine
	attrs   []map[string]string
	changed broadcast.Signal // at every new record
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// OnTransition records t; use it as conn.Config.OnTransition.
func (r *Recorder) OnTransition(t conn.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unread = append(r.unread, t)
	r.notify()
}

// notify wakes the waiters; r.mu is held.
func (r *Recorder) notify() {
	r.changed.Notify()
}

// await calls ready under the recorder's lock until it reports true, each
// time something new is recorded, for up to limit; it reports whether
// ready did.
func (r *Recorder) await(limit time.Duration, ready func() bool) bool {
	return r.wait(limit, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return ready()
	})
}

// wait calls check, without the recorder's lock, until it reports true,
// each time something new is recorded, for up to limit; it reports
// whether check did. The channel is taken before each check, so a record
// made during the check still wakes the next round.
func (r *Recorder) wait(limit time.Duration, check func() bool) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		ch := r.Changed()
		if check() {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return check()
		}
	}
}

// Logger returns a logger whose records the recorder keeps.
func (r *Recorder) Logger() *slog.Logger { return slog.New(&handler{r: r}) }

// Next waits up to limit for the next transition and returns it; it fails
// tb if none comes.
func (r *Recorder) Next(tb T, limit time.Duration) conn.Transition {
	tb.Helper()
	var t conn.Transition
	if !r.await(limit, func() bool {
		if len(r.unread) == 0 {
			return false
		}
		t = r.unread[0]
		r.unread = r.unread[1:]
		r.seen = append(r.seen, t)
		return true
	}) {
		tb.Fatalf("no transition within %v; seen %s", limit, Path(r.Seen()))
	}
	return t
}

// Expect waits for transitions into states, in order, each within limit,
// and fails tb on the first that differs.
func (r *Recorder) Expect(tb T, limit time.Duration, states ...conn.State) []conn.Transition {
	tb.Helper()
	var got []conn.Transition
	for _, want := range states {
		t := r.Next(tb, limit)
		got = append(got, t)
		if t.To != want {
			tb.Fatalf("got %s -> %s (%s), want -> %s; seen %s", t.From, t.To, t.Event, want, Path(r.Seen()))
		}
	}
	return got
}

// NoTransition fails tb if a transition is waiting to be read.
func (r *Recorder) NoTransition(tb T) {
	tb.Helper()
	r.mu.Lock()
	unread := append([]conn.Transition(nil), r.unread...)
	r.mu.Unlock()
	if len(unread) > 0 {
		t := unread[0]
		tb.Fatalf("unexpected transition %s -> %s (%s)", t.From, t.To, t.Event)
	}
}

// WaitLog waits up to limit for a log line at level whose message starts
// with prefix and returns it; it fails tb if none comes.
func (r *Recorder) WaitLog(tb T, limit time.Duration, level slog.Level, prefix string) LogLine {
	tb.Helper()
	var found LogLine
	if !r.await(limit, func() bool {
		for _, l := range r.lines {
			if l.Level == level && strings.HasPrefix(l.Msg, prefix) {
				found = l
				return true
			}
		}
		return false
	}) {
		tb.Fatalf("no %v log line starting %q within %v; have %v", level, prefix, limit, r.Logs(slog.LevelDebug))
	}
	return found
}

// Seen returns the transitions read so far by Next, Expect and Await (the
// transitions Await skipped included), in the order they were recorded.
func (r *Recorder) Seen() []conn.Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]conn.Transition(nil), r.seen...)
}

// Logs returns the captured log lines at or above level.
func (r *Recorder) Logs(level slog.Level) []LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []LogLine
	for _, l := range r.lines {
		if l.Level >= level {
			out = append(out, l)
		}
	}
	return out
}

// Record is a captured log line with its attributes, rendered as strings.
type Record struct {
	LogLine
	Attrs map[string]string
}

// Records returns the captured log lines at or above level, with their
// attributes.
func (r *Recorder) Records(level slog.Level) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for i, l := range r.lines {
		if l.Level >= level {
			out = append(out, Record{l, r.attrs[i]})
		}
	}
	return out
}

// Path renders transitions as "a -event-> b -event-> c".
func Path(trs []conn.Transition) string {
	var b strings.Builder
	for i, t := range trs {
		if i == 0 {
			b.WriteString(string(t.From))
		}
		b.WriteString(" -" + string(t.Event) + "-> " + string(t.To))
	}
	return b.String()
}

// handler feeds a Recorder; attrs are those of Logger.With.
type handler struct {
	r     *Recorder
	attrs []slog.Attr
}

func (h *handler) Enabled(context.Context, slog.Level) bool { return true }
func (h *handler) WithGroup(string) slog.Handler            { return h }
func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{r: h.r, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *handler) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]string{}
	for _, a := range h.attrs {
		attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.lines = append(h.r.lines, LogLine{rec.Level, rec.Message})
	h.r.attrs = append(h.r.attrs, attrs)
	h.r.notify()
	return nil
}
