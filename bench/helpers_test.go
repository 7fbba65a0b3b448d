package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
)

// wait bounds every wait of the harness; a benchmark that hits it fails
// rather than hangs.
const wait = 20 * time.Second

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// quantile returns the q-quantile (nearest rank) of xs; xs is not changed.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ms converts a duration to fractional milliseconds for ReportMetric.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// floorClient is the bare SDK client of every floor. It does what a
// supervisor's client does and any host that offers a server's tools
// must: it follows the server's tool changes (under protocol 2026-07-28
// the SDK then opens a subscriptions/listen stream, as conn does), and the
// floors keep the tools they list.
func floorClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "floor", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
}

type echoArgs struct {
	Text string `json:"text"`
}

var echoIn = map[string]any{"text": "hello"}

// newEchoServer is the in-process server of the in-memory benchmarks: one
// tool, echo, as the fixture server has.
func newEchoServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, &mcp.ServerOptions{Logger: quiet()})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	return srv
}

// checkEcho fails b unless res is echo's answer to echoIn.
func checkEcho(tb testing.TB, res *mcp.CallToolResult, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("call echo: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		tb.Fatalf("call echo: unexpected result %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello" {
		tb.Fatalf("call echo: unexpected content %+v", res.Content[0])
	}
}

// memServer is one in-process mcp.Server that any number of clients reach
// over in-memory transports. Each slot (one supervisor) remembers the server
// end of its current generation's pipe, so a benchmark can crash it.
type memServer struct {
	srv   *mcp.Server
	slots []atomic.Pointer[serverEnd]
}

func newMemServer(slots int) *memServer {
	return &memServer{srv: newEchoServer(), slots: make([]atomic.Pointer[serverEnd], slots)}
}

// serverEnd is the server's end of one in-memory pipe. Severing it is a
// crash: the pipe breaks under both sides at once, and the server cancels
// whatever its session was handling. (A graceful ServerSession.Close would
// not do: it waits for in-flight requests, and go-sdk v1.8.0 can miss a
// subscriptions/listen request that arrived just before, which then never
// returns.)
type serverEnd struct {
	mcp.Transport
	conn atomic.Pointer[mcp.Connection]
}

func (e *serverEnd) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := e.Transport.Connect(ctx)
	if err == nil {
		e.conn.Store(&c)
	}
	return c, err
}

func (e *serverEnd) sever() {
	if c := e.conn.Load(); c != nil {
		_ = (*c).Close()
	}
}

// pipe connects a fresh server session and returns the client's end and
// the server's. The server session lives on its own context: the
// supervisor cancels the attempt's context once the attempt is over.
func (m *memServer) pipe() (mcp.Transport, *serverEnd, error) {
	ct, st := mcp.NewInMemoryTransports()
	end := &serverEnd{Transport: st}
	if _, err := m.srv.Connect(context.Background(), end, nil); err != nil {
		return nil, nil, err
	}
	return ct, end, nil
}

// transport is slot's conn.Transport: a new in-memory pair per generation.
func (m *memServer) transport(slot int) conn.Transport {
	return conn.TransportFunc(func(context.Context) (mcp.Transport, error) {
		ct, end, err := m.pipe()
		if err != nil {
			return nil, err
		}
		m.slots[slot].Store(end)
		return ct, nil
	})
}

// crashAll severs every slot's current pipe at once, as a server that dies
// under all its clients would.
func (m *memServer) crashAll() {
	var wg sync.WaitGroup
	for i := range m.slots {
		if end := m.slots[i].Load(); end != nil {
			wg.Go(end.sever)
		}
	}
	wg.Wait()
}

// drained waits until the server has no session left.
func (m *memServer) drained(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(wait)
	for {
		n := 0
		for range m.srv.Sessions() {
			n++
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d server sessions still open after %v", n, wait)
		}
		time.Sleep(time.Millisecond)
	}
}

// closeAll closes supervisors concurrently and fails tb on any error.
func closeAll(tb testing.TB, sups []*conn.Supervisor) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	errs := make([]error, len(sups))
	var wg sync.WaitGroup
	for i, s := range sups {
		if s != nil {
			wg.Go(func() { errs[i] = s.Close(ctx) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("Close: %v", err)
		}
	}
}

// lastPID returns the newest PID the fixture appended to its -pidlog.
func lastPID(tb testing.TB, path string) int {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read pidlog: %v", err)
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		tb.Fatalf("pidlog %s is empty", path)
	}
	pid, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		tb.Fatalf("pidlog %s: %v", path, err)
	}
	return pid
}

// boxedPID returns the host PID of the running process of bin that is
// the init of a PID namespace of its own (NSpid ends in 1): a server in
// the sandbox.
func boxedPID(tb testing.TB, bin string) int {
	tb.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || string(bytes.SplitN(cmdline, []byte{0}, 2)[0]) != bin {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(strings.TrimPrefix(line, "NSpid:")); strings.HasPrefix(line, "NSpid:") && len(f) > 1 && f[len(f)-1] == "1" {
				return pid
			}
		}
	}
	tb.Fatalf("no sandboxed process of %s is running", bin)
	return 0
}

// signal is a non-blocking notifier for OnTransition, which must not block.
type signal[T any] chan T

func (s signal[T]) post(v T) {
	select {
	case s <- v:
	default:
	}
}

func (s signal[T]) await(tb testing.TB, what string) T {
	tb.Helper()
	select {
	case v := <-s:
		return v
	case <-time.After(wait):
		tb.Fatalf("no %s within %v", what, wait)
		panic("unreachable")
	}
}

func (s signal[T]) drain() {
	for {
		select {
		case <-s:
		default:
			return
		}
	}
}

// sname is the supervisor name of slot i.
func sname(i int) string { return fmt.Sprintf("s%05d", i) }
