package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/internal/otlptest"
	"github.com/mcpfsm/mcpfsm/internal/stats"
)

var (
	serveOld      = flag.String("serve.old", "", "BenchmarkServeHTTP, BenchmarkServeSessions: an older mcpfsm binary, measured serving shared beside the new one (scripts/bench builds it from SERVE_BASE)")
	serveAB       = flag.String("serve.ab", "", "BenchmarkServeHTTP, BenchmarkServeSessions: another build of mcpfsm (a change to weigh), measured per client with both backends beside this tree's")
	serveWindow   = flag.Duration("serve.window", 100*time.Millisecond, "BenchmarkServeHTTP/clients=N, BenchmarkServePolicy/clients=N: how long each arm is loaded in a round (scripts/bench sets 2s)")
	serveSessions = flag.Int("serve.sessions", 20, "BenchmarkServeSessions: sessions per arm (scripts/bench sets 500)")
)

// serveResource is serve's OAuth resource URL in the benchmarks, and the
// audience of their tokens.
const serveResource = "http://127.0.0.1/mcp"

// armSpec says how to start one arm of the serve benchmarks: a server
// that clients reach over Streamable HTTP on loopback.
type armSpec struct {
	name string
	// bin is the mcpfsm binary; "" is the floor, the fixture serving
	// Streamable HTTP itself.
	bin string
	// isolation is the server's "isolation" key; "" leaves it out (an
	// older binary, which knows no such key, serves every client one
	// backend session).
	isolation string
	// httpBackend puts the fixture behind serve as a Streamable HTTP
	// server of its own process, instead of a stdio server.
	httpBackend bool
	// keys are more keys of the server's config (policy).
	keys map[string]any
	// issuer makes serve an OAuth resource server of it; every client
	// then has a token of its own subject with scopes.
	issuer *fixture.Issuer
	scopes string
	// env is added to serve's environment (tracing).
	env []string
}

// arm is a running arm: its processes and its clients.
type arm struct {
	armSpec
	url   string
	procs []*proc // the server, then an HTTP backend's own process
	pool  []*client
}

// client is one client of an arm: a session of its own over an HTTP
// transport of its own, as a separate client process would have.
type client struct {
	sess *mcp.ClientSession
	tr   *http.Transport
}

// withAuth adds a bearer token to every request.
type withAuth struct {
	rt    http.RoundTripper
	token string
}

func (w withAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return w.rt.RoundTrip(r)
}

// startArm starts spec's processes; they are stopped at the end of tb,
// or by stop.
func startArm(tb testing.TB, spec armSpec) *arm {
	tb.Helper()
	a := &arm{armSpec: spec}
	fix := fixture.Build(tb)
	if spec.bin == "" {
		p := startProc(tb, "testserver: listening ", nil, fix, "-http")
		a.url, a.procs = p.url, []*proc{p}
		tb.Cleanup(func() { _ = a.closeClients() }) // before the process stops
		return a
	}
	server := map[string]any{"command": fix}
	var backend *proc
	if spec.httpBackend {
		backend = startProc(tb, "testserver: listening ", nil, fix, "-http")
		server = map[string]any{"url": backend.url}
	}
	if spec.isolation != "" {
		server["isolation"] = spec.isolation
	}
	for k, v := range spec.keys {
		server[k] = v
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"fix": server}})
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "servers.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		tb.Fatal(err)
	}
	sessions := max(1024, 2**serveSessions)
	args := []string{"serve", "-config", path, "-names", "raw", "-listen", "127.0.0.1:0",
		"-max-sessions", fmt.Sprint(sessions), "-max-conns", fmt.Sprint(4 * sessions)}
	switch {
	case spec.issuer != nil:
		args = append(args, "-oauth-issuer", spec.issuer.URL, "-oauth-resource", serveResource)
	case spec.isolation != "":
		// Without a credential a loopback bind makes a token of its own;
		// these clients send none (an older binary, which has no
		// "isolation", has no such token either).
		args = append(args, "-unauthenticated")
	}
	p := startProc(tb, "serving MCP over Streamable HTTP at ", spec.env, spec.bin, args...)
	a.url, a.procs = p.url, []*proc{p}
	if backend != nil {
		a.procs = append(a.procs, backend)
	}
	tb.Cleanup(func() { _ = a.closeClients() }) // before the processes stop
	return a
}

// stop closes the arm's clients and stops its processes.
func (a *arm) stop(tb testing.TB) {
	_ = a.closeClients()
	for _, p := range a.procs {
		p.stop(tb)
	}
}

// fatalf fails tb with what the arm's processes last logged.
func (a *arm) fatalf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	for _, p := range a.procs {
		p.logTail(tb)
	}
	tb.Fatalf("%s: %s", a.name, fmt.Sprintf(format, args...))
}

func (a *arm) pids() []int {
	out := make([]int, len(a.procs))
	for i, p := range a.procs {
		out[i] = p.pid()
	}
	return out
}

// dial connects a client as subject, on protocol 2025-11-25.
func (a *arm) dial(ctx context.Context, tb testing.TB, subject, scopes string) (*client, error) {
	c := &client{tr: http.DefaultTransport.(*http.Transport).Clone()}
	var rt http.RoundTripper = c.tr
	if a.issuer != nil {
		rt = withAuth{rt: c.tr, token: a.issuer.Token(tb, serveResource, subject, scopes)}
	}
	sess, err := floorClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url, HTTPClient: &http.Client{Transport: rt}},
		&mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion})
	if err != nil {
		c.tr.CloseIdleConnections()
		return nil, err
	}
	c.sess = sess
	return c, nil
}

func (c *client) close() error {
	err := c.sess.Close()
	c.tr.CloseIdleConnections()
	return err
}

// call calls echo and checks its answer.
func (c *client) call(ctx context.Context) error {
	res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoIn})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello" {
		return fmt.Errorf("unexpected content %+v", res.Content[0])
	}
	return nil
}

// clients returns the arm's first n clients, connecting more as needed;
// each new one has called echo once (so that a per-client instance has
// started).
func (a *arm) clients(tb testing.TB, n int) []*client {
	tb.Helper()
	if have := len(a.pool); have < n {
		ctx, cancel := context.WithTimeout(context.Background(), fleetWait(n-have))
		defer cancel()
		more := make([]*client, n-have)
		errs := make([]error, n-have)
		parallel(n-have, func(i int) {
			c, err := a.dial(ctx, tb, fmt.Sprintf("client-%05d", have+i), a.scopes)
			if err == nil {
				more[i] = c
				err = c.call(ctx)
			}
			errs[i] = err
		})
		for _, c := range more {
			if c != nil {
				a.pool = append(a.pool, c)
			}
		}
		if err := errors.Join(errs...); err != nil {
			a.fatalf(tb, "connecting %d clients: %v", n-have, err)
		}
	}
	return a.pool[:n]
}

// closeClients closes the arm's clients, and returns their errors.
func (a *arm) closeClients() error {
	errs := make([]error, len(a.pool))
	var wg sync.WaitGroup
	for i, c := range a.pool {
		wg.Go(func() { errs[i] = c.close() })
	}
	wg.Wait()
	a.pool = nil
	return errors.Join(errs...)
}

// serveSpecs are the arms of the serve benchmarks: the floor; serve with
// each client's own instance of a stdio server and of an HTTP server;
// serve sharing one stdio server; with -serve.old, an older serve
// sharing one stdio server; with -serve.ab, another build per client
// with both backends.
func serveSpecs(tb testing.TB) []armSpec {
	bin := fixture.BuildHost(tb)
	specs := []armSpec{
		{name: "floor"},
		{name: "per-client-stdio", bin: bin, isolation: "per-client"},
		{name: "per-client-http", bin: bin, isolation: "per-client", httpBackend: true},
		{name: "shared-stdio", bin: bin, isolation: "shared"},
	}
	if *serveOld != "" {
		specs = append(specs, armSpec{name: "old-shared-stdio", bin: *serveOld})
	} else {
		tb.Log("no -serve.old: the older serve is not measured beside the new one (scripts/bench builds it from SERVE_BASE)")
	}
	if *serveAB != "" {
		specs = append(specs, armSpec{name: "ab-per-client-stdio", bin: *serveAB, isolation: "per-client"},
			armSpec{name: "ab-per-client-http", bin: *serveAB, isolation: "per-client", httpBackend: true})
	}
	return specs
}

// suite is arms measured against the first, the floor, in the same
// rounds.
type suite struct {
	arms []*arm
	rng  *rand.Rand
}

func startSuite(tb testing.TB, specs []armSpec) *suite {
	s := &suite{rng: rand.New(rand.NewPCG(30, 32))}
	for _, spec := range specs {
		s.arms = append(s.arms, startArm(tb, spec))
	}
	return s
}

// latency times one client's calls: a round calls echo once on each arm,
// in an order drawn at random, one client per arm. It reports each arm's
// p50, the ratio of each p50 to the floor's (the figure of the targets)
// and the median of the rounds' ratios with a 95 % interval.
func (s *suite) latency(b *testing.B) {
	ctx := context.Background()
	one := make([]*client, len(s.arms))
	for k, a := range s.arms {
		one[k] = a.clients(b, 1)[0]
		for range 20 { // warm both ends
			if err := one[k].call(ctx); err != nil {
				a.fatalf(b, "%v", err)
			}
		}
	}
	took := make([][]time.Duration, len(s.arms))
	ratio := make([][]float64, len(s.arms))
	round := make([]time.Duration, len(s.arms))
	b.ResetTimer()
	for range b.N {
		for _, k := range s.rng.Perm(len(s.arms)) {
			t0 := time.Now()
			if err := one[k].call(ctx); err != nil {
				s.arms[k].fatalf(b, "%v", err)
			}
			round[k] = time.Since(t0)
			took[k] = append(took[k], round[k])
		}
		for k := 1; k < len(s.arms); k++ {
			ratio[k] = append(ratio[k], float64(round[k])/float64(round[0]))
		}
	}
	b.StopTimer()
	floor := quantile(took[0], 0.5)
	b.ReportMetric(ms(floor), "floor-p50-ms")
	for k := 1; k < len(s.arms); k++ {
		p50, name := quantile(took[k], 0.5), s.arms[k].name
		b.ReportMetric(ms(p50), name+"-p50-ms")
		b.ReportMetric(float64(p50)/float64(floor), name+"-p50-x")
		stats.ReportMedianCI(b, name+"-x", ratio[k])
	}
}

// throughput loads each arm with n clients calling echo back to back for
// -serve.window, the arms one after the other in an order drawn at random
// each round. It reports each arm's calls per second (median of the
// rounds, with their range), the ratio of each to the floor's of the
// same round (median and range), and the CPU time per call of the arm's
// processes (the server and every process it started) and of this
// process (the clients).
func (s *suite) throughput(b *testing.B, n int) {
	pools := make([][]*client, len(s.arms))
	for k, a := range s.arms {
		pools[k] = a.clients(b, n)
	}
	rate := make([][]float64, len(s.arms))
	ratio := make([][]float64, len(s.arms))
	cpu := make([][]float64, len(s.arms))
	clientCPU := make([][]float64, len(s.arms))
	round := make([]float64, len(s.arms))
	b.ResetTimer()
	for range b.N {
		for _, k := range s.rng.Perm(len(s.arms)) {
			a := s.arms[k]
			cpu0, err := cpuOf(a.pids()...)
			if err != nil {
				b.Fatal(err)
			}
			own0 := processCPU()
			r, calls, err := burst(pools[k], *serveWindow)
			if err != nil {
				a.fatalf(b, "%v", err)
			}
			own := processCPU() - own0
			cpu1, err := cpuOf(a.pids()...)
			if err != nil {
				b.Fatal(err)
			}
			round[k] = r
			rate[k] = append(rate[k], r)
			cpu[k] = append(cpu[k], float64(cpu1-cpu0)/float64(time.Microsecond)/float64(calls))
			clientCPU[k] = append(clientCPU[k], float64(own)/float64(time.Microsecond)/float64(calls))
		}
		for k := 1; k < len(s.arms); k++ {
			ratio[k] = append(ratio[k], round[k]/round[0])
		}
	}
	b.StopTimer()
	for k, a := range s.arms {
		reportRange(b, a.name+"-calls/s", rate[k])
		if k > 0 {
			reportRange(b, a.name+"-x", ratio[k])
		}
		reportRange(b, a.name+"-cpu-us/call", cpu[k])
		reportRange(b, a.name+"-client-cpu-us/call", clientCPU[k])
	}
}

// burst has every client call echo back to back until d has passed, and
// returns the calls completed per second, from the start until the last
// call ended, and how many.
func burst(cs []*client, d time.Duration) (float64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+wait)
	defer cancel()
	var calls atomic.Int64
	errs := make([]error, len(cs))
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if errs[i] = c.call(ctx); errs[i] != nil {
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	n := calls.Load()
	return float64(n) / time.Since(start).Seconds(), max(n, 1), errors.Join(errs...)
}

// reportRange reports the median of xs as name, and its least and
// greatest as name-min and name-max.
func reportRange(b *testing.B, name string, xs []float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	b.ReportMetric(s[len(s)/2], name)
	b.ReportMetric(s[0], name+"-min")
	b.ReportMetric(s[len(s)-1], name+"-max")
}

// BenchmarkServeHTTP measures mcpfsm serve -listen over real loopback
// sockets against its floor, the fixture serving Streamable HTTP itself,
// with the same client (go-sdk, a session and an HTTP transport per
// client, protocol 2025-11-25, the echo tool): serve giving each client
// its own instance of a stdio server and of an HTTP server, serve sharing
// one stdio server, and with -serve.old an older serve (sharing). Each
// iteration is a round over every arm: latency times one client's calls
// (b.N rounds of one call per arm); clients=N loads each arm with N
// clients for -serve.window.
func BenchmarkServeHTTP(b *testing.B) {
	s := startSuite(b, serveSpecs(b))
	b.Run("latency", s.latency)
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { s.throughput(b, n) })
	}
}

// BenchmarkServeSessions measures what -serve.sessions sessions cost in
// each arm of BenchmarkServeHTTP: the resident memory of the server and
// every process it started (and of an HTTP backend's own process), and
// how many processes. Each round starts every arm afresh, in an order
// drawn at random, opens the sessions (each calls echo once, so that a
// per-client instance has started), measures, closes them, checks that
// every per-client instance ended with its session, and stops the arm.
// It fails when the processes are not what the mode promises: one
// backend process per session in per-client mode with a stdio server,
// none more in the others.
func BenchmarkServeSessions(b *testing.B) {
	specs := serveSpecs(b)
	n := *serveSessions
	rng := rand.New(rand.NewPCG(30, 500))
	type sample struct{ rest, with treeUsage }
	got := make([][]sample, len(specs))
	for range b.N {
		for _, k := range rng.Perm(len(specs)) {
			a := startArm(b, specs[k])
			rest := a.usage(b)
			a.clients(b, n)
			with := a.usage(b)
			want := rest.procs
			if a.isolation == "per-client" && !a.httpBackend {
				want += n
			}
			if with.procs != want {
				a.fatalf(b, "%d processes with %d sessions, %d before them: want %d", with.procs, n, rest.procs, want)
			}
			if err := a.closeClients(); err != nil {
				a.fatalf(b, "closing its clients: %v", err)
			}
			a.awaitProcs(b, rest.procs, fleetWait(n))
			a.stop(b)
			got[k] = append(got[k], sample{rest, with})
		}
	}
	mb := func(x int64) float64 { return float64(x) / (1 << 20) }
	for k, spec := range specs {
		var procs, rss, pss, restRSS, perSession []float64
		for _, s := range got[k] {
			procs = append(procs, float64(s.with.procs))
			rss = append(rss, mb(s.with.rss))
			pss = append(pss, mb(s.with.pss))
			restRSS = append(restRSS, mb(s.rest.rss))
			perSession = append(perSession, float64(s.with.pss-s.rest.pss)/1024/float64(n))
		}
		reportRange(b, spec.name+"-procs", procs)
		reportRange(b, spec.name+"-rss-MB", rss)
		reportRange(b, spec.name+"-pss-MB", pss)
		reportRange(b, spec.name+"-rest-rss-MB", restRSS)
		reportRange(b, spec.name+"-pss-KiB/session", perSession)
	}
}

// usage is the usage of the arm's processes and their descendants.
func (a *arm) usage(tb testing.TB) treeUsage {
	tb.Helper()
	u, err := usageOf(a.pids()...)
	if err != nil {
		tb.Fatalf("%s: %v", a.name, err)
	}
	return u
}

// awaitProcs waits until the arm runs n processes.
func (a *arm) awaitProcs(tb testing.TB, n int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		u := a.usage(tb)
		if u.procs == n {
			return
		}
		if time.Now().After(deadline) {
			a.fatalf(tb, "%d processes %v after its clients closed, want %d", u.procs, within, n)
		}
		time.Sleep(10 * time.Millisecond) // processes ending, seen from outside them
	}
}

// BenchmarkServePolicy measures what the per-caller policy and tracing
// add to a call through serve -listen (each client its own instance of a
// stdio server, OAuth tokens of a test issuer): "base" has no rules and
// tracing off; "rules" adds allowScopes and toolScopes that the caller's
// scopes pass; "traced" turns tracing on, exporting to an OTLP/HTTP
// receiver on loopback; "no-oauth" is base without OAuth (the loopback
// rule alone), for what verifying a token costs. The floor, the fixture serving Streamable HTTP
// itself, runs in the same rounds. latency and clients=16 are as in
// BenchmarkServeHTTP. It fails when a caller without the tool's scope is
// not refused by rules, or when no span reached the receiver.
func BenchmarkServePolicy(b *testing.B) {
	bin := fixture.BuildHost(b)
	issuer := fixture.NewIssuer(b)
	recv := otlptest.New(b)
	const scopes = "bench:use bench:echo"
	rules := map[string]any{"allowScopes": []string{"bench:use"},
		"toolScopes": map[string]any{"ech*": []string{"bench:echo"}, "crash": []string{"bench:admin"}}}
	s := startSuite(b, []armSpec{
		{name: "floor"},
		{name: "no-oauth", bin: bin, isolation: "per-client"},
		{name: "base", bin: bin, isolation: "per-client", issuer: issuer, scopes: scopes},
		{name: "rules", bin: bin, isolation: "per-client", issuer: issuer, scopes: scopes, keys: rules},
		{name: "traced", bin: bin, isolation: "per-client", issuer: issuer, scopes: scopes,
			env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}},
	})
	ruled, traced := s.arms[3], s.arms[4]

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	outsider, err := ruled.dial(ctx, b, "outsider", "bench:use")
	if err != nil {
		b.Fatal(err)
	}
	err = outsider.call(ctx)
	_ = outsider.close()
	if err == nil || !strings.Contains(err.Error(), "bench:echo") {
		b.Fatalf("rules: a caller without bench:echo called echo: %v; want a refusal naming the scope", err)
	}

	b.Run("latency", s.latency)
	b.Run("clients=16", func(b *testing.B) { s.throughput(b, 16) })

	traced.stop(b) // serve exports the spans it holds as it stops
	if spans := recv.Spans(); len(spans) == 0 {
		b.Fatal("traced: no span reached the OTLP receiver")
	} else {
		b.Logf("traced: %d spans received", len(spans))
	}
}
