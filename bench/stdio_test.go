package bench_test

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

var (
	stdioN = flag.Int("stdio.n", 10, "BenchmarkStdioIdle: real stdio servers per side (scripts/bench sets more)")
	massN  = flag.Int("mass.n", 10, "BenchmarkStdioRecoverAll: real stdio servers per side (scripts/bench sets more)")
)

// fleetWait bounds a wait on n real processes: the harness's wait plus
// 50 ms per process, for a loaded two-core machine that starts them all at
// once after a mass kill.
func fleetWait(n int) time.Duration { return wait + time.Duration(n)*50*time.Millisecond }

// parallel runs f(i) for i in [0, n) on at most 8 goroutines.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, 8) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// bareStdio is one bare SDK session of the fixture over
// mcp.CommandTransport, having listed the tools: the floor of a stdio
// supervisor.
type bareStdio struct {
	cmd   *exec.Cmd
	cs    *mcp.ClientSession
	tools []*mcp.Tool // kept, as a host that offers them does
}

func dialBare(ctx context.Context, bin string) (bareStdio, error) {
	cmd := exec.Command(bin)
	cs, err := floorClient().
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: conn.DefaultProtocolVersion})
	if err != nil {
		return bareStdio{}, err
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		_ = cs.Close()
		return bareStdio{}, err
	}
	return bareStdio{cmd: cmd, cs: cs, tools: res.Tools}, nil
}

func startBareStdio(tb testing.TB, bin string, n int) []bareStdio {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait(n))
	defer cancel()
	out := make([]bareStdio, n)
	errs := make([]error, n)
	parallel(n, func(i int) { out[i], errs[i] = dialBare(ctx, bin) })
	for i, err := range errs {
		if err != nil {
			closeBareStdio(out)
			tb.Fatalf("floor session %d: %v", i, err)
		}
	}
	return out
}

func closeBareStdio(s []bareStdio) {
	parallel(len(s), func(i int) {
		if s[i].cs != nil {
			_ = s[i].cs.Close()
		}
	})
}

// stdioFleet is n supervisors of the fixture over conn.Command, each
// logging its server's PIDs to a file of its own.
type stdioFleet struct {
	reg     *conn.ToolRegistry
	sups    []*conn.Supervisor
	pidlogs []string
	names   []string // echo's public name, per supervisor
}

func startStdioFleet(tb testing.TB, bin string, n int, onUp func(i int)) *stdioFleet {
	tb.Helper()
	dir := tb.TempDir()
	f := &stdioFleet{reg: conn.NewRegistry(), sups: make([]*conn.Supervisor, n), pidlogs: make([]string, n), names: make([]string, n)}
	p := fastPolicy(time.Nanosecond)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait(n))
	defer cancel()
	parallel(n, func(i int) {
		f.pidlogs[i] = filepath.Join(dir, fmt.Sprintf("pids-%d", i))
		f.names[i] = conn.PublicToolName(sname(i), "echo")
		cfg := conn.Config{
			Name: sname(i), Transport: conn.Command(bin, "-pidlog", f.pidlogs[i]), Registry: f.reg,
			Reconnect: &p, Logger: quiet(),
			// As long as the floor may take: a storm of respawns (and of
			// reaping) on a small machine is slow, not broken, and a
			// close barrier that expires halts a supervisor for good.
			ConnectTimeout: fleetWait(n),
			CloseTimeout:   fleetWait(n),
		}
		if onUp != nil {
			cfg.OnTransition = func(tr conn.Transition) {
				if tr.To == conn.Established {
					onUp(i)
				}
			}
		}
		// Up one by one per worker: a storm of first attempts on a small
		// machine would run into ConnectTimeout.
		if f.sups[i], errs[i] = conn.Start(context.Background(), cfg); errs[i] == nil {
			errs[i] = f.sups[i].Ready(ctx)
		}
	})
	for i, err := range errs {
		if err != nil {
			closeAll(tb, f.sups)
			tb.Fatalf("supervisor %d: %v", i, err)
		}
	}
	return f
}

// idleStdio measures one side of BenchmarkStdioIdle: the process's usage
// before start and once its n sessions are idle.
func idleStdio(start func() (stop func())) (before, after usage, osBefore, osAfter osUsage) {
	debug.FreeOSMemory()
	before, osBefore = measure(), osStats()
	stop := start()
	settle()
	debug.FreeOSMemory()
	after, osAfter = measure(), osStats()
	stop()
	return
}

// BenchmarkStdioIdle measures what an idle supervisor of a real stdio
// server costs beyond a bare SDK session of the same server over
// mcp.CommandTransport: -stdio.n of each, one side after the other in
// alternating order. It reports, per supervisor beyond a bare session,
// goroutines, Go memory (heap and stacks), resident memory, and OS
// threads: those blocked waiting for a child process (held-threads/sup,
// read from /proc/self/task) and the growth of the process's thread count
// (new-threads/sup; the Go runtime keeps idle threads, so this is only
// meaningful in the first run of a process).
func BenchmarkStdioIdle(b *testing.B) {
	bin := fixture.Build(b)
	n := *stdioN
	var g, mem, stack, rss, held, threads float64
	var floorG, floorMem, floorRSS float64
	for i := range b.N {
		bare := func() func() {
			s := startBareStdio(b, bin, n)
			return func() { closeBareStdio(s) }
		}
		sups := func() func() {
			f := startStdioFleet(b, bin, n, nil)
			return func() { closeAll(b, f.sups) }
		}
		type side struct {
			u0, u1 usage
			o0, o1 osUsage
		}
		var fs, ss side
		if i%2 == 0 {
			fs.u0, fs.u1, fs.o0, fs.o1 = idleStdio(bare)
			ss.u0, ss.u1, ss.o0, ss.o1 = idleStdio(sups)
		} else {
			ss.u0, ss.u1, ss.o0, ss.o1 = idleStdio(sups)
			fs.u0, fs.u1, fs.o0, fs.o1 = idleStdio(bare)
		}
		fG, fH, fS := per(fs.u0, fs.u1, n)
		sG, sH, sS := per(ss.u0, ss.u1, n)
		g += sG - fG
		mem += (sH + sS) - (fH + fS)
		stack += sS - fS
		fr := float64(fs.o1.rss-fs.o0.rss) / float64(n)
		rss += float64(ss.o1.rss-ss.o0.rss)/float64(n) - fr
		held += float64((ss.o1.waiting-ss.o0.waiting)-(fs.o1.waiting-fs.o0.waiting)) / float64(n)
		threads += float64((ss.o1.threads-ss.o0.threads)-(fs.o1.threads-fs.o0.threads)) / float64(n)
		floorG += fG
		floorMem += fH + fS
		floorRSS += fr
	}
	k := float64(b.N)
	b.ReportMetric(g/k, "goroutines/sup")
	b.ReportMetric(mem/k, "mem-B/sup")
	b.ReportMetric(stack/k, "stack-B/sup")
	b.ReportMetric(rss/k, "rss-B/sup")
	b.ReportMetric(held/k, "held-threads/sup")
	b.ReportMetric(threads/k, "new-threads/sup")
	b.ReportMetric(floorG/k, "floor-goroutines/session")
	b.ReportMetric(floorMem/k, "floor-mem-B/session")
	b.ReportMetric(floorRSS/k, "floor-rss-B/session")
}

// pids reads the current server process of every supervisor from its PID
// log.
func (f *stdioFleet) pids(tb testing.TB) []int {
	tb.Helper()
	pids := make([]int, len(f.pidlogs))
	for i, p := range f.pidlogs {
		pids[i] = lastPID(tb, p)
	}
	return pids
}

// killAll SIGKILLs every process of pids.
func killAll(tb testing.TB, pids []int) {
	tb.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			tb.Fatalf("kill %d: %v", pid, err)
		}
	}
}

// recoverAllSups kills every server of a fleet of n supervisors at once and
// returns, per supervisor, the time from the first kill until it is
// established again and a call of echo through the registry succeeded,
// and the CPU time the host process spent meanwhile.
func recoverAllSups(tb testing.TB, bin string, n int) ([]time.Duration, time.Duration) {
	tb.Helper()
	var armed atomic.Bool
	ups := make([]chan struct{}, n)
	for i := range ups {
		ups[i] = make(chan struct{}, 1)
	}
	f := startStdioFleet(tb, bin, n, func(i int) {
		if armed.Load() {
			select {
			case ups[i] <- struct{}{}:
			default:
			}
		}
	})
	defer closeAll(tb, f.sups)
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait(n))
	defer cancel()
	armed.Store(true)
	out := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// As for the floor: the clock starts, the waiting goroutines are made,
	// then every server is killed, while they already wait (a host
	// starved by thousands of processes starting is slow to make
	// goroutines and to send signals, and that delay must count alike on
	// both sides).
	pids := f.pids(tb)
	t0, cpu0 := time.Now(), processCPU()
	for i := range n {
		wg.Go(func() {
			select {
			case <-ups[i]:
			case <-ctx.Done():
				errs[i] = fmt.Errorf("not re-established (state %s): %w", f.sups[i].State(), ctx.Err())
				return
			}
			res, err := f.reg.Call(ctx, f.names[i], echoIn)
			if err == nil && (res.IsError || len(res.Content) != 1) {
				err = fmt.Errorf("unexpected result %+v", res)
			}
			errs[i] = err
			out[i] = time.Since(t0)
		})
	}
	killAll(tb, pids)
	wg.Wait()
	cpu := processCPU() - cpu0
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("supervisor %d after the mass kill: %v", i, err)
		}
	}
	return out, cpu
}

// recoverAllBare is the floor of recoverAllSups: n bare SDK sessions over
// mcp.CommandTransport, each with a goroutine that, once its session's
// Wait returns, closes it and connects a new one, lists the tools and calls
// echo, with no backoff. All n processes are killed at once.
func recoverAllBare(tb testing.TB, bin string, n int) ([]time.Duration, time.Duration) {
	tb.Helper()
	old := startBareStdio(tb, bin, n)
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait(n))
	defer cancel()
	out := make([]time.Duration, n)
	fresh := make([]bareStdio, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0, cpu0 := time.Now(), processCPU()
	for i, s := range old {
		wg.Go(func() {
			_ = s.cs.Wait()
			_ = s.cs.Close()
			fresh[i], errs[i] = dialBare(ctx, bin)
			if errs[i] != nil {
				return
			}
			res, err := fresh[i].cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoIn})
			if err == nil && (res.IsError || len(res.Content) != 1) {
				err = fmt.Errorf("unexpected result %+v", res)
			}
			errs[i] = err
			out[i] = time.Since(t0)
		})
	}
	for _, s := range old {
		if err := s.cmd.Process.Kill(); err != nil {
			tb.Errorf("floor: kill: %v", err)
		}
	}
	wg.Wait()
	cpu := processCPU() - cpu0
	closeBareStdio(fresh)
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("floor session %d after the mass kill: %v", i, err)
		}
	}
	return out, cpu
}

// BenchmarkStdioRecoverAll supervises -mass.n real stdio servers (the
// fixture, a Go SDK server), SIGKILLs all of them at once, and measures
// until every supervisor is established again and a call through the
// registry succeeded (policy: 1 ns backoff, no jitter). The floor, in the
// same iteration in alternating order, is -mass.n bare SDK sessions
// reconnected by their own goroutines with no backoff, each until a call
// succeeded. It reports p50, p99 and max (recover-all) of both, the
// ratio of the maxima, and the CPU time the host process (where every
// client and supervisor runs) spent per server from the kill until the
// last call.
func BenchmarkStdioRecoverAll(b *testing.B) {
	bin := fixture.Build(b)
	n := *massN
	var sups, floor []time.Duration
	var worst, floorWorst []time.Duration
	var cpu, floorCPU time.Duration
	runFloor := func() {
		fl, c := recoverAllBare(b, bin, n)
		floor, floorWorst = append(floor, fl...), append(floorWorst, quantile(fl, 1))
		floorCPU += c
	}
	for i := range b.N {
		if i%2 == 1 {
			runFloor()
		}
		s, c := recoverAllSups(b, bin, n)
		sups, worst = append(sups, s...), append(worst, quantile(s, 1))
		cpu += c
		if i%2 == 0 {
			runFloor()
		}
	}
	perServer := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n*b.N) }
	b.ReportMetric(ms(quantile(sups, 0.5)), "p50-ms")
	b.ReportMetric(ms(quantile(sups, 0.99)), "p99-ms")
	b.ReportMetric(ms(quantile(worst, 0.5)), "all-ms")
	b.ReportMetric(ms(quantile(floor, 0.5)), "floor-p50-ms")
	b.ReportMetric(ms(quantile(floorWorst, 0.5)), "floor-all-ms")
	b.ReportMetric(float64(quantile(worst, 0.5))/float64(quantile(floorWorst, 0.5)), "all-ratio")
	b.ReportMetric(perServer(cpu), "host-cpu-ms/server")
	b.ReportMetric(perServer(floorCPU), "floor-host-cpu-ms/server")
	b.ReportMetric(float64(n), "servers")
}

// TestStdioSupervisorsHoldNoThread: 200 supervisors of real stdio servers,
// all up and idle, hold no OS thread: none is blocked waiting for its child
// (a reaper in cmd.Wait would hold one each), and the process's thread
// count grows by no more than the few threads the runtime starts while
// processes are being spawned.
func TestStdioSupervisorsHoldNoThread(t *testing.T) {
	if !osStats().ok {
		t.Skip("no /proc: OS threads cannot be counted here")
	}
	bin := fixture.Build(t)
	// Warm up: spawning blocks threads briefly, and the runtime keeps the
	// threads it started for that; let them exist before counting.
	closeAll(t, startStdioFleet(t, bin, 8, nil).sups)
	const n = 200
	before := osStats()
	f := startStdioFleet(t, bin, n, nil)
	settle()
	after := osStats()
	closeAll(t, f.sups)
	t.Logf("before %+v after %+v", before, after)
	if held := after.waiting - before.waiting; held > 0 {
		t.Errorf("%d supervisors hold %d threads blocked in a process wait, want 0", n, held)
	}
	if grown := after.threads - before.threads; grown > 8 {
		t.Errorf("%d supervisors grew the process by %d OS threads (from %d to %d), want at most 8", n, grown, before.threads, after.threads)
	}
}
