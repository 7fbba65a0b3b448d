package bench_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
)

var (
	scaleN    = flag.Int("scale.n", 100, "BenchmarkScale/recover: number of supervisors (scripts/bench sets 1000)")
	scaleIdle = flag.String("scale.idle", "100", "BenchmarkScale/idle: comma-separated numbers of supervisors (scripts/bench sets 1000,10000)")
)

// idleSizes parses -scale.idle.
func idleSizes(tb testing.TB) []int {
	var out []int
	for f := range strings.SplitSeq(*scaleIdle, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			tb.Fatalf("-scale.idle=%q: %q is not a positive number of supervisors", *scaleIdle, f)
		}
		out = append(out, n)
	}
	return out
}

// memWait bounds a wait on n in-memory sessions: the harness's wait plus
// 5 ms per session, for a loaded machine that connects them one by one.
func memWait(n int) time.Duration { return wait + time.Duration(n)*5*time.Millisecond }

// usage is the process's goroutines and live memory after a full GC.
type usage struct {
	goroutines  int
	heap, stack uint64
}

func measure() usage {
	var ms runtime.MemStats
	// Twice: the first cycle's finalizers and sweeps free more.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return usage{goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc, stack: ms.StackInuse}
}

// per returns (after-before)/n for each figure.
func per(before, after usage, n int) (g, heap, stack float64) {
	return float64(after.goroutines-before.goroutines) / float64(n),
		(float64(after.heap) - float64(before.heap)) / float64(n),
		(float64(after.stack) - float64(before.stack)) / float64(n)
}

// settle waits until the goroutine count stops changing, so a measurement
// sees idle sessions rather than ones still finishing their handshake.
func settle() {
	last := -1
	for range 200 {
		n := runtime.NumGoroutine()
		if n == last {
			return
		}
		last = n
		time.Sleep(5 * time.Millisecond)
	}
}

// scaleFleet is n supervisors of one in-memory server, sharing a registry.
type scaleFleet struct {
	m    *memServer
	sups []*conn.Supervisor

	// Set by arm, read by the OnTransition callbacks: the time each
	// supervisor came back up, and how many are still down.
	upAt    []atomic.Int64
	armed   atomic.Bool
	pending atomic.Int64
	all     chan struct{}
}

func startFleet(tb testing.TB, n int, p policy.Policy) *scaleFleet {
	tb.Helper()
	f := &scaleFleet{m: newMemServer(n), sups: make([]*conn.Supervisor, n), upAt: make([]atomic.Int64, n)}
	reg := conn.NewRegistry()
	ctx := context.Background()
	for i := range n {
		s, err := conn.Start(ctx, conn.Config{
			Name: sname(i), Transport: f.m.transport(i), Registry: reg, Reconnect: &p, Logger: quiet(),
			OnTransition: func(tr conn.Transition) {
				if tr.To != conn.Established || !f.armed.Load() {
					return
				}
				if f.upAt[i].CompareAndSwap(0, time.Now().UnixNano()) && f.pending.Add(-1) == 0 {
					close(f.all)
				}
			},
		})
		if err != nil {
			f.close(tb)
			tb.Fatalf("Start %d: %v", i, err)
		}
		f.sups[i] = s
	}
	wctx, cancel := context.WithTimeout(ctx, memWait(n))
	defer cancel()
	for i, s := range f.sups {
		if err := s.Ready(wctx); err != nil {
			f.close(tb)
			tb.Fatalf("supervisor %d not ready: %v", i, err)
		}
	}
	return f
}

func (f *scaleFleet) close(tb testing.TB) {
	tb.Helper()
	closeAll(tb, f.sups)
	f.m.drained(tb)
}

// crashAndRecover closes every server session at once and returns, for
// each supervisor, how long after the crash began it was established again.
func (f *scaleFleet) crashAndRecover(tb testing.TB) []time.Duration {
	tb.Helper()
	for i := range f.upAt {
		f.upAt[i].Store(0)
	}
	f.all = make(chan struct{})
	f.pending.Store(int64(len(f.sups)))
	f.armed.Store(true)
	defer f.armed.Store(false)
	t0 := time.Now()
	f.m.crashAll()
	select {
	case <-f.all:
	case <-time.After(memWait(len(f.sups))):
		tb.Fatalf("%d of %d supervisors not re-established %v after the crash", f.pending.Load(), len(f.sups), memWait(len(f.sups)))
	}
	out := make([]time.Duration, len(f.sups))
	for i := range f.upAt {
		out[i] = time.Duration(f.upAt[i].Load() - t0.UnixNano())
	}
	return out
}

// bareSessions is the floor of the idle figures: n SDK client sessions of
// the same server, over the same in-memory transports, each with its own
// client as a supervisor's generation has, and the tools it listed.
func bareSessions(tb testing.TB, m *memServer, n int) []bareMem {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), memWait(n))
	defer cancel()
	out := make([]bareMem, n)
	for i := range n {
		b, err := bareSession(ctx, m, i)
		if err != nil {
			tb.Fatalf("floor session %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

// bareMem is one bare SDK session and the tools it listed (a host keeps
// them to offer them, as a supervisor does).
type bareMem struct {
	cs    *mcp.ClientSession
	tools []*mcp.Tool
}

// bareSession connects one bare SDK session and lists the tools, as a
// supervisor's attempt does. Its server session goes into m's slot i if m
// has one (i < 0: none).
func bareSession(ctx context.Context, m *memServer, i int) (bareMem, error) {
	ct, end, err := m.pipe()
	if err != nil {
		return bareMem{}, err
	}
	if i >= 0 && i < len(m.slots) {
		m.slots[i].Store(end)
	}
	cs, err := floorClient().
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: conn.DefaultProtocolVersion})
	if err != nil {
		return bareMem{}, err
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		_ = cs.Close()
		return bareMem{}, fmt.Errorf("list tools: %w", err)
	}
	return bareMem{cs: cs, tools: res.Tools}, nil
}

// bareRecover is the floor of a mass recovery: n bare SDK sessions of a
// fresh server, all crashed at once, each reconnected by its own goroutine
// as soon as it sees its session end, with no backoff. It returns each
// session's time from the crash to its new session listing tools.
func bareRecover(tb testing.TB, n int) []time.Duration {
	tb.Helper()
	m := newMemServer(n)
	old := bareSessions(tb, m, n)
	ctx, cancel := context.WithTimeout(context.Background(), memWait(n))
	defer cancel()
	out := make([]time.Duration, n)
	fresh := make([]bareMem, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, b := range old {
		wg.Go(func() {
			_ = b.cs.Wait()
			fresh[i], errs[i] = bareSession(ctx, m, -1)
			out[i] = time.Since(t0)
			_ = b.cs.Close()
		})
	}
	m.crashAll()
	wg.Wait()
	for i, b := range fresh {
		if errs[i] != nil {
			tb.Errorf("floor reconnect %d: %v", i, errs[i])
		}
		if b.cs != nil {
			_ = b.cs.Close()
		}
	}
	m.drained(tb)
	return out
}

var scalePolicy = policy.Policy{Enabled: true, InitialDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxAttempts: 1000}

// BenchmarkScale runs many supervisors over in-memory servers. "idle/n=N",
// for each N of -scale.idle, reports goroutines and memory per idle
// supervisor beyond a bare SDK session of the same server (the floor,
// measured in the same iteration); equal figures at every N show a linear
// cost. "recover" crashes the sessions of -scale.n supervisors at once and
// reports how the reconnects spread, without and with jitter.
func BenchmarkScale(b *testing.B) {
	for _, n := range idleSizes(b) {
		b.Run(fmt.Sprintf("idle/n=%d", n), func(b *testing.B) {
			var gs, hs, ss, fg, fh float64
			for range b.N {
				m := newMemServer(0)
				base := measure()
				floor := bareSessions(b, m, n)
				settle()
				withFloor := measure()
				for _, f := range floor {
					if err := f.cs.Close(); err != nil {
						b.Fatalf("close floor session: %v", err)
					}
				}
				m.drained(b)
				floor = nil
				fG, fH, fS := per(base, withFloor, n)

				base = measure()
				f := startFleet(b, n, scalePolicy)
				settle()
				withSups := measure()
				f.close(b)
				sG, sH, sS := per(base, withSups, n)

				gs += sG - fG
				hs += sH - fH
				ss += sS - fS
				fg += fG
				fh += fH
			}
			k := float64(b.N)
			b.ReportMetric(gs/k, "goroutines/sup")
			b.ReportMetric(hs/k, "heap-B/sup")
			b.ReportMetric(ss/k, "stack-B/sup")
			b.ReportMetric((hs+ss)/k, "mem-B/sup")
			b.ReportMetric(fg/k, "floor-goroutines/session")
			b.ReportMetric(fh/k, "floor-heap-B/session")
		})
	}
	for _, jitter := range []float64{0, 0.5} {
		n := *scaleN
		b.Run(fmt.Sprintf("recover/jitter=%g", jitter), func(b *testing.B) {
			p := scalePolicy
			p.Jitter = jitter
			f := startFleet(b, n, p)
			defer f.close(b)
			var all, floor []time.Duration
			b.ResetTimer()
			for i := range b.N {
				if i > 0 {
					// Let the stability window pass, so every crash starts
					// a fresh outage budget with the initial delay.
					time.Sleep(p.StabilityWindow() + 10*time.Millisecond)
				}
				// Alternate which goes first.
				if i%2 == 1 {
					floor = append(floor, bareRecover(b, n)...)
				}
				all = append(all, f.crashAndRecover(b)...)
				if i%2 == 0 {
					floor = append(floor, bareRecover(b, n)...)
				}
			}
			b.StopTimer()
			b.ReportMetric(ms(quantile(all, 0.5)), "p50-ms")
			b.ReportMetric(ms(quantile(all, 0.99)), "p99-ms")
			b.ReportMetric(ms(quantile(all, 1)), "max-ms")
			b.ReportMetric(ms(quantile(floor, 0.5)), "floor-p50-ms")
			b.ReportMetric(ms(quantile(floor, 1)), "floor-max-ms")
			b.ReportMetric(float64(quantile(all, 1))/float64(quantile(floor, 1)), "max-ratio")
		})
	}
}
