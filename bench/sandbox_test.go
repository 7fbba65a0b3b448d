package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// benchSpec is a sandbox as docs/sandbox.md's example has it: reads all
// but ~/.ssh, writes one directory, reaches one domain through the proxy.
func benchSpec(dir string) *sandbox.Spec {
	home, _ := os.UserHomeDir()
	return &sandbox.Spec{DenyRead: []string{filepath.Join(home, ".ssh")}, AllowWrite: []string{dir},
		AllowedDomains: []string{"example.com"}}
}

// BenchmarkSandbox measures what a sandbox costs a stdio server, against
// the same server unsandboxed in the same loop, interleaved in rotating
// order: spawn-to-ready (conn.Start with FailOnStartupError returns once
// the server is established, its tools listed; the close is not timed),
// and the recovery after a SIGKILL at the default first delay (500ms) and
// at the smallest (1 ns), from the kill until a call through the registry
// succeeded. The sandbox's part is the launcher: a re-exec of the host
// program in new user and network namespaces, its Landlock rules, and the
// proxy's listener handed over.
func BenchmarkSandbox(b *testing.B) {
	b.Run("spawn", benchSandboxSpawn)
	for _, d := range []time.Duration{policy.Default().InitialDelay, time.Nanosecond} {
		b.Run("recovery/delay="+d.String(), func(b *testing.B) { benchSandboxRecovery(b, d) })
	}
}

func benchSandboxSpawn(b *testing.B) {
	bin := fixture.Build(b)
	dir := b.TempDir()
	spec := benchSpec(dir)
	p := policy.Default()
	spawn := func(sb *sandbox.Spec) time.Duration {
		tr := conn.Command(bin)
		if sb != nil { // not a nil *Spec in the interface
			tr.Launcher = sb
		}
		t0 := time.Now()
		sup, err := conn.Start(context.Background(), conn.Config{Name: "fx", Transport: tr, Registry: conn.NewRegistry(),
			Reconnect: &p, FailOnStartupError: true, Logger: quiet()})
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("Start (sandbox %v): %v", sb != nil, err)
		}
		b.StopTimer()
		closeAll(b, []*conn.Supervisor{sup})
		b.StartTimer()
		return d
	}
	var plain, boxed []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			plain = append(plain, spawn(nil))
			boxed = append(boxed, spawn(spec))
		} else {
			boxed = append(boxed, spawn(spec))
			plain = append(plain, spawn(nil))
		}
	}
	b.StopTimer()
	report(b, plain, boxed)
}

func benchSandboxRecovery(b *testing.B, delay time.Duration) {
	p := fastPolicy(delay)
	plainF := startFixtureIn(b, p, nil)
	boxedF := startFixtureIn(b, p, benchSpec(b.TempDir()))
	ctx := context.Background()
	recoverOne := func(f *fixtureSup) time.Duration {
		t0 := f.kill(b)
		f.up.await(b, "reconnect")
		res, err := f.reg.Call(ctx, f.echo, echoIn)
		checkEcho(b, res, err)
		return time.Since(t0)
	}
	var plain, boxed []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			plain = append(plain, recoverOne(plainF))
			boxed = append(boxed, recoverOne(boxedF))
		} else {
			boxed = append(boxed, recoverOne(boxedF))
			plain = append(plain, recoverOne(plainF))
		}
	}
	b.StopTimer()
	report(b, plain, boxed)
}

// report gives both sides' medians and ranges and the ratio of medians.
func report(b *testing.B, plain, boxed []time.Duration) {
	b.ReportMetric(ms(quantile(plain, 0.5)), "plain-p50-ms")
	b.ReportMetric(ms(quantile(boxed, 0.5)), "sandboxed-p50-ms")
	b.ReportMetric(ms(quantile(plain, 0)), "plain-min-ms")
	b.ReportMetric(ms(quantile(plain, 1)), "plain-max-ms")
	b.ReportMetric(ms(quantile(boxed, 0)), "sandboxed-min-ms")
	b.ReportMetric(ms(quantile(boxed, 1)), "sandboxed-max-ms")
	b.ReportMetric(float64(quantile(boxed, 0.5))/float64(quantile(plain, 0.5)), "ratio")
}
