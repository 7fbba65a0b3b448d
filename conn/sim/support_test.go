package sim

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
)

// recorder is the registry a supervisor publishes to: the run's
// conn.ToolRegistry, with every swap recorded for the invariants.
type recorder struct {
	*conn.ToolRegistry
	r   *run
	inc int
}

// Replace records the swap once the registry took it.
func (g *recorder) Replace(old, next []conn.Tool) ([]func(), error) {
	uns, err := g.ToolRegistry.Replace(old, next)
	if err == nil {
		g.r.published(g.inc, next)
	}
	return uns, err
}

// plainRecorder is a registry without Replace or Reserve: the supervisor
// swaps by unregistering, then registering, one tool at a time.
type plainRecorder struct{ g *recorder }

// Register records each registration as a swap of one tool.
func (p plainRecorder) Register(t conn.Tool) (func(), error) {
	un, err := p.g.ToolRegistry.Register(t)
	if err == nil {
		p.g.r.publishedOne(p.g.inc, t)
	}
	return un, err
}

// toolProc is the process whose listing a tool came from.
func toolProc(t conn.Tool) int {
	if t.Raw == nil {
		return 0
	}
	if f, ok := t.Raw.Meta["sim/proc"].(float64); ok {
		return int(f)
	}
	return 0
}

func (r *run) published(inc int, tools []conn.Tool) {
	p := Publish{At: r.now(), Inc: inc}
	for _, t := range tools {
		p.Tools = append(p.Tools, t.Raw.Name+"="+t.Raw.Description)
		if n := toolProc(t); !slices.Contains(p.Procs, n) {
			p.Procs = append(p.Procs, n)
		}
	}
	slices.Sort(p.Tools)
	r.stamp(&p)
	r.logf("supervisor %d published %v from process %v", inc, p.Tools, p.Procs)
	r.record(func(h *History) { h.Publishes = append(h.Publishes, p) })
}

// publishedOne records one registration of a registry without Replace:
// whether it is stale, not whether its listing was complete.
func (r *run) publishedOne(inc int, t conn.Tool) {
	p := Publish{At: r.now(), Inc: inc, Tools: []string{t.Raw.Name + "=" + t.Raw.Description}, Procs: []int{toolProc(t)}}
	r.stamp(&p)
	p.Complete = [][]string{p.Tools} // a single registration is no listing
	r.record(func(h *History) { h.Publishes = append(h.Publishes, p) })
}

// stamp adds what the world knows at a publish: the newest process of
// the supervisor, whether conn had terminated the one the tools name,
// and its complete listings.
func (r *run) stamp(p *Publish) {
	if np := r.w.newestOf(p.Inc); np != nil {
		p.Newest = np.n
	}
	if len(p.Procs) == 1 {
		if src := r.w.proc(p.Procs[0]); src != nil {
			src.mu.Lock()
			p.Killed = src.terminated
			src.mu.Unlock()
			p.Complete = src.completeListings()
		}
	}
}

// snapshot returns the executions of every call and the plan each process
// started with.
func (w *world) snapshot() (map[string]int, []Proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	execs := make(map[string]int, len(w.execs))
	for k, v := range w.execs {
		execs[k] = v
	}
	procs := make([]Proc, len(w.procs))
	for i, p := range w.procs {
		procs[i] = p.started
	}
	return execs, procs
}

// all returns every process.
func (w *world) all() []*process {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.procs)
}

// proc returns process n, or nil.
func (w *world) proc(n int) *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n < 1 || n > len(w.procs) {
		return nil
	}
	return w.procs[n-1]
}

// newestOf returns the newest process supervisor inc opened, or nil.
func (w *world) newestOf(inc int) *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.procs) - 1; i >= 0; i-- {
		if w.procs[i].inc == inc {
			return w.procs[i]
		}
	}
	return nil
}

// watchedClock is a supervisor's clock: the real one, which in the run's
// bubble is simulated time, with every AfterFunc watched. A timer that
// fires after its supervisor's Close returned nil was left armed: a leak.
type watchedClock struct {
	clock.Clock
	r      *run
	inc    int
	closed atomic.Bool
}

// AfterFunc arms f, and records a leak if it fires after Close.
func (c *watchedClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	var pcs [1]uintptr
	runtime.Callers(2, pcs[:])
	return c.Clock.AfterFunc(d, func() {
		if c.closed.Load() {
			frame, _ := runtime.CallersFrames(pcs[:]).Next()
			c.r.record(func(h *History) {
				h.Leaks = append(h.Leaks, fmt.Sprintf("a timer of supervisor %d armed in %s (%s:%d) fired after its Close returned nil",
					c.inc, frame.Function, frame.File, frame.Line))
			})
		}
		f()
	})
}

// logHandler takes the supervisors' logs: lines in which conn reports a
// bug of its own are recorded; with Options.Log, every line is logged.
type logHandler struct {
	r     *run
	inc   int
	attrs []slog.Attr
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool {
	// WARN and above always: the moves into failed-* and lost-* states
	// are logged there (FailedAndLostWorded reads them).
	return l >= slog.LevelWarn || h.r.opts.Log != nil && l >= slog.LevelInfo
}

func (h *logHandler) Handle(_ context.Context, rec slog.Record) error {
	var state, from string
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "state":
			state = a.Value.String()
		case "from":
			from = a.Value.String()
		}
		return true
	})
	if st := conn.State(state); from != "" && (st.Failed() || st.Lost()) {
		at := h.r.now()
		h.r.record(func(hist *History) {
			hist.Logged = append(hist.Logged, Logged{At: at, Inc: h.inc, State: st, Msg: rec.Message})
		})
	}
	bug := strings.Contains(rec.Message, "this is a bug in mcpfsm")
	if !bug && h.r.opts.Log == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	line := b.String()
	if bug {
		h.r.record(func(hist *History) { hist.Bugs = append(hist.Bugs, line) })
	}
	if h.r.opts.Log != nil {
		h.r.logf("log: %s", line)
	}
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{r: h.r, inc: h.inc, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

// stacks is the buffer of bubbleLeaks, kept across runs (a sync.Pool
// would drop it at every collection).
var stacks struct {
	sync.Mutex
	buf []byte
}

// bubbleLeaks returns the goroutines of the caller's synctest bubble
// other than the caller and the bubble's own, each as its header and the
// first function of its stack.
func bubbleLeaks() []string {
	self := make([]byte, 256)
	self = self[:runtime.Stack(self, false)]
	head, _, _ := bytes.Cut(self, []byte("\n"))
	i := bytes.Index(head, []byte("synctest bubble "))
	if i < 0 {
		return nil
	}
	bubble := string(head[i : i+bytes.IndexByte(head[i:], ']')+1])
	selfID := strings.Fields(string(head))[1]
	stacks.Lock()
	defer stacks.Unlock()
	if stacks.buf == nil {
		stacks.buf = make([]byte, 1<<20)
	}
	var buf []byte
	for {
		n := runtime.Stack(stacks.buf, true)
		if n < len(stacks.buf) {
			buf = stacks.buf[:n]
			break
		}
		stacks.buf = make([]byte, 2*len(stacks.buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		first, rest, _ := strings.Cut(g, "\n")
		if !strings.Contains(first, bubble) || strings.HasPrefix(first, "goroutine "+selfID+" ") || strings.Contains(first, "[synctest.Run") {
			continue
		}
		fn, _, _ := strings.Cut(rest, "\n")
		if strings.HasPrefix(fn, "testing/synctest.testingSynctestTest") {
			continue // the bubble's own
		}
		out = append(out, "goroutine "+strings.TrimSpace(fn)+" "+first[strings.Index(first, "["):])
	}
	return out
}
