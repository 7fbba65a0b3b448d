package bench_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// fastPolicy retries after delay, for ever. 1 ns is the smallest delay
// policy.Policy accepts (conn then starts the next attempt with no timer),
// 1 ms the smallest a JSON policy can state.
func fastPolicy(delay time.Duration) policy.Policy {
	return policy.Policy{Enabled: true, InitialDelay: delay, MaxDelay: delay, MaxAttempts: policy.AttemptsLimit}
}

// fixtureSup supervises the fixture server and tells when the connection
// comes up and when it leaves established.
type fixtureSup struct {
	bin, pidlog string
	reg         *conn.ToolRegistry
	sup         *conn.Supervisor
	up          signal[time.Time] // entered established
	lost        signal[time.Time] // left established
	connecting  signal[time.Time] // entered connecting (backoff elapsed)
	echo        string            // echo's public name
	boxed       bool              // the server runs in a sandbox, as its PID namespace's init
}

func startFixture(b *testing.B, p policy.Policy) *fixtureSup { return startFixtureIn(b, p, nil) }

// startFixtureIn is startFixture with the server in a sandbox (nil: none);
// the sandbox may write the pidlog's directory.
func startFixtureIn(b *testing.B, p policy.Policy, sb *sandbox.Spec) *fixtureSup {
	b.Helper()
	f := &fixtureSup{
		bin:        fixture.Build(b),
		reg:        conn.NewRegistry(),
		up:         make(signal[time.Time], 1),
		lost:       make(signal[time.Time], 1),
		connecting: make(signal[time.Time], 1),
		echo:       conn.PublicToolName("fx", "echo"),
	}
	f.pidlog = filepath.Join(b.TempDir(), "pids")
	tr := conn.Command(f.bin, "-pidlog", f.pidlog)
	if sb != nil {
		spec := *sb
		spec.AllowWrite = append(spec.AllowWrite, filepath.Dir(f.pidlog))
		tr.Launcher = &spec
		f.boxed = true
	}
	sup, err := conn.Start(context.Background(), conn.Config{
		Name:               "fx",
		Transport:          tr,
		Registry:           f.reg,
		Reconnect:          &p,
		FailOnStartupError: true,
		Logger:             quiet(),
		OnTransition: func(tr conn.Transition) {
			now := time.Now()
			switch {
			case tr.To == conn.Established:
				f.up.post(now)
			case tr.From == conn.Established:
				f.lost.post(now)
			case tr.To == conn.Connecting:
				f.connecting.post(now)
			}
		},
	})
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	f.sup = sup
	f.up.drain()
	b.Cleanup(func() { closeAll(b, []*conn.Supervisor{sup}) })
	return f
}

// kill SIGKILLs the current server process and returns when it was sent.
func (f *fixtureSup) kill(b *testing.B) time.Time {
	b.Helper()
	var pid int
	if f.boxed {
		// The sandboxed server is the init of its own PID namespace and
		// logs no PID (its own would be 1): find it by its host PID.
		pid = boxedPID(b, f.bin)
	} else {
		pid = lastPID(b, f.pidlog)
	}
	t0 := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		b.Fatalf("kill %d: %v", pid, err)
	}
	return t0
}

// bareSDK is the floor of a recovery: the SDK alone spawns the same server
// binary, connects, lists the tools and calls echo. It returns how long
// that took; closing the session is not timed.
func bareSDK(b *testing.B, bin, pidlog string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	t0 := time.Now()
	client := floorClient()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-pidlog", pidlog)},
		&mcp.ClientSessionOptions{ProtocolVersion: conn.DefaultProtocolVersion})
	if err != nil {
		b.Fatalf("floor: connect: %v", err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			b.Errorf("floor: close: %v", err)
		}
	}()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		b.Fatalf("floor: list tools: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoIn})
	checkEcho(b, res, err)
	return time.Since(t0)
}

// bareUp starts a bare SDK session of the server binary over
// mcp.CommandTransport.
func bareUp(b *testing.B, bin, pidlog string) (*exec.Cmd, *mcp.ClientSession) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.Command(bin, "-pidlog", pidlog)
	cs, err := floorClient().
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: conn.DefaultProtocolVersion})
	if err != nil {
		b.Fatalf("floor: connect: %v", err)
	}
	return cmd, cs
}

// bareCrash is the detection-inclusive floor of a recovery: a bare SDK
// session of the same binary is up (not timed); its process is SIGKILLed,
// the session's Wait notices, Close reaps the process, and then the SDK
// spawns a new one, connects, lists the tools and calls echo. It returns
// the time from the kill to the call's answer.
func bareCrash(b *testing.B, bin, pidlog string) time.Duration {
	b.Helper()
	cmd, cs := bareUp(b, bin, pidlog)
	t0 := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		b.Fatalf("floor: kill: %v", err)
	}
	_ = cs.Wait()
	_ = cs.Close()
	return time.Since(t0) + bareSDK(b, bin, pidlog)
}

// BenchmarkRecovery measures a crash recovery end to end: from SIGKILL of
// the server process until the supervisor has a new process up, its tools
// registered again, and a call through the registry has succeeded. Two
// floors are measured in the same loop, in rotating order: the bare SDK
// spawning the same binary, connecting, listing tools and calling a tool
// (spawn-only: the least any recovery must cost), and the same after a
// bare session noticed the same kill and closed (detection-inclusive).
// delay=1ns is the smallest backoff policy.Policy accepts, delay=1ms the
// smallest of a JSON policy.
func BenchmarkRecovery(b *testing.B) {
	for _, d := range []time.Duration{time.Nanosecond, time.Millisecond} {
		b.Run("delay="+d.String(), func(b *testing.B) { benchRecovery(b, d) })
	}
}

func benchRecovery(b *testing.B, delay time.Duration) {
	f := startFixture(b, fastPolicy(delay))
	floorLog := filepath.Join(b.TempDir(), "floor-pids")
	ctx := context.Background()
	var sup, spawn, crash, detect, backoff, connect, call []time.Duration
	recoverSup := func() {
		t0 := f.kill(b)
		lost := f.lost.await(b, "loss")
		connecting := f.connecting.await(b, "attempt")
		up := f.up.await(b, "reconnect")
		res, err := f.reg.Call(ctx, f.echo, echoIn)
		checkEcho(b, res, err)
		done := time.Now()
		sup = append(sup, done.Sub(t0))
		detect = append(detect, lost.Sub(t0))
		backoff = append(backoff, connecting.Sub(lost))
		connect = append(connect, up.Sub(connecting))
		call = append(call, done.Sub(up))
	}
	steps := []func(){
		recoverSup,
		func() { spawn = append(spawn, bareSDK(b, f.bin, floorLog)) },
		func() { crash = append(crash, bareCrash(b, f.bin, floorLog)) },
	}
	b.ResetTimer()
	for i := range b.N {
		// Rotate the order, so none always runs first.
		for k := range steps {
			steps[(i+k)%len(steps)]()
		}
	}
	b.StopTimer()
	p50 := quantile(sup, 0.5)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(quantile(sup, 0.99)), "p99-ms")
	b.ReportMetric(ms(quantile(spawn, 0.5)), "spawn-floor-p50-ms")
	b.ReportMetric(ms(quantile(crash, 0.5)), "detect-floor-p50-ms")
	b.ReportMetric(ms(quantile(spawn, 0.99)), "spawn-floor-p99-ms")
	b.ReportMetric(float64(p50)/float64(quantile(spawn, 0.5)), "spawn-ratio")
	b.ReportMetric(float64(p50)/float64(quantile(crash, 0.5)), "detect-ratio")
	// Where the time goes, by phase (p50 of each).
	b.ReportMetric(ms(quantile(detect, 0.5)), "detect-p50-ms")
	b.ReportMetric(ms(quantile(backoff, 0.5)), "backoff-p50-ms")
	b.ReportMetric(ms(quantile(connect, 0.5)), "connect-p50-ms")
	b.ReportMetric(ms(quantile(call, 0.5)), "call-p50-ms")
}

// bareLoss is the floor of a detection: a bare SDK session of the same
// server binary, its process SIGKILLed, timed until the session's Wait
// returns. Starting and closing the session is not timed.
func bareLoss(b *testing.B, bin, pidlog string) time.Duration {
	b.Helper()
	cmd, cs := bareUp(b, bin, pidlog)
	defer func() { _ = cs.Close() }()
	b.StartTimer()
	t0 := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		b.Fatalf("floor: kill: %v", err)
	}
	_ = cs.Wait()
	d := time.Since(t0)
	b.StopTimer()
	return d
}

// BenchmarkDetection measures how fast a supervisor notices that its server
// died: from sending SIGKILL to the OnTransition callback of the step out
// of established, both on the real clock. The wait for the reconnect that
// follows is not timed. The floor, in the same loop, is a bare SDK session
// of the same binary noticing the same kill (its Wait returning).
func BenchmarkDetection(b *testing.B) {
	f := startFixture(b, fastPolicy(time.Millisecond))
	floorLog := filepath.Join(b.TempDir(), "floor-pids")
	var det, floor []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := f.kill(b)
		det = append(det, f.lost.await(b, "loss").Sub(t0))
		b.StopTimer()
		f.up.await(b, "reconnect")
		floor = append(floor, bareLoss(b, f.bin, floorLog))
		b.StartTimer()
	}
	b.StopTimer()
	p50, floor50 := quantile(det, 0.5), quantile(floor, 0.5)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(quantile(det, 0.99)), "p99-ms")
	b.ReportMetric(ms(floor50), "floor-p50-ms")
	b.ReportMetric(ms(quantile(floor, 0.99)), "floor-p99-ms")
	b.ReportMetric(float64(p50)/float64(floor50), "p50-ratio")
}
