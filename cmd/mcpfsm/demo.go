package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const demoUsage = `Usage: mcpfsm demo

Shows mcpfsm at work in about 10 seconds, with nothing to install and no
config file: it supervises two stdio servers, both real processes of the
mcpfsm program itself,

  flaky   answers calls, and crashes 2.5s after each start
  broken  exits at once, every time: it never comes up

and calls flaky's tool every 400ms. Every state transition is printed
live with the state machine path behind it: broken's failures are
"connection failed" (it never came up) until mcpfsm gives up; flaky's
crashes are "connection lost" (it was up), and each is followed by a
reconnect. Calls made during an outage fail at once, without waiting for
the server; calls after the reconnect succeed. The demo ends after flaky
has recovered twice, stops both servers and confirms that no process is
left.
`

// demoRecoveries is how many recoveries of flaky the demo waits for.
const demoRecoveries = 2

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", demoUsage)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "demo", fs.Arg(0))
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm demo: cannot find its own program to run as the servers: %v\n", err)
		return exitFail
	}
	d := &demo{out: stdout, start: time.Now(), paths: map[string][]string{}, recovered: make(chan struct{})}
	fmt.Fprintf(stdout, "mcpfsm demo: supervising two stdio servers (real processes of %s):\n", exe)
	fmt.Fprintf(stdout, "  flaky   answers calls, crashes %v after each start; reconnect 1s..2s, 5 attempts\n", flakyLife)
	fmt.Fprintf(stdout, "  broken  exits at once, every time; reconnect 300ms..600ms, 3 attempts\n\n")

	reg := conn.NewRegistry()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil)) // the demo prints transitions itself
	servers := []struct {
		name string
		p    policy.Policy
	}{
		{"flaky", policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 2 * time.Second, MaxAttempts: 5}},
		{"broken", policy.Policy{Enabled: true, InitialDelay: 300 * time.Millisecond, MaxDelay: 600 * time.Millisecond, MaxAttempts: 3}},
	}
	var sups []*conn.Supervisor
	for _, s := range servers {
		t := conn.Command(exe)
		t.Env = []string{demoServerEnv + "=" + s.name}
		if pl := os.Getenv(demoPIDLogEnv); pl != "" {
			// A stdio server gets no host variable it is not given.
			t.Env = append(t.Env, demoPIDLogEnv+"="+pl)
		}
		sup, err := conn.Start(ctx, conn.Config{
			Name: s.name, Transport: t, Registry: reg, Reconnect: &s.p,
			CloseTimeout: 3 * time.Second, Logger: quiet, OnTransition: d.transition,
		})
		if err != nil {
			fmt.Fprintf(stderr, "mcpfsm demo: %v\n", err)
			return exitFail
		}
		sups = append(sups, sup)
	}

	calls, stopCalls := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.caller(calls, reg) })
	code := exitOK
	select {
	case <-d.recovered:
	case <-time.After(25 * time.Second):
		fmt.Fprintln(stdout, "mcpfsm demo: flaky did not recover in time")
		code = exitFail
	case <-ctx.Done():
		code = exitFail
	}
	stopCalls()
	wg.Wait()

	fmt.Fprintf(stdout, "\n%5.1fs closing both supervisors...\n", d.since())
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, sup := range sups {
		if err := sup.Close(cctx); err != nil {
			fmt.Fprintf(stdout, "mcpfsm demo: %v\n", err)
			code = exitFail
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(stdout, "%5.1fs done: %d calls succeeded, %d failed fast (the slowest failure took %v); every server process has exited\n",
		d.since(), d.ok, d.failed, d.slowestFail.Round(time.Microsecond))
	return code
}

// demo prints what the supervisors and the caller see.
type demo struct {
	out   io.Writer
	start time.Time

	mu          sync.Mutex
	paths       map[string][]string // server -> "state -event->" steps
	recoveries  int
	recovered   chan struct{} // closed after demoRecoveries recoveries of flaky
	ok, failed  int
	slowestFail time.Duration
}

func (d *demo) since() float64 { return time.Since(d.start).Seconds() }

// transition runs on a supervisor's loop: it prints and never blocks.
func (d *demo) transition(t conn.Transition) {
	d.mu.Lock()
	defer d.mu.Unlock()
	path := d.paths[t.Server]
	if len(path) == 0 {
		path = append(path, string(t.From))
	}
	path = append(path, "-"+string(t.Event)+"->", string(t.To))
	d.paths[t.Server] = path
	var msg string
	switch t.To {
	case conn.FailedRetrying, conn.LostReconnecting:
		msg = fmt.Sprintf("%s in %v (attempt %d/%d)", t.To.Phrase(), t.Delay, t.Attempt, t.MaxAttempts)
	case conn.Established:
		msg = "connected"
		if t.Attempt > 0 {
			msg = fmt.Sprintf("reconnected (attempt %d/%d); tools re-synced", t.Attempt, t.MaxAttempts)
		}
	case conn.Exhausted:
		msg = fmt.Sprintf("%s after %d failed attempts; its tools are unregistered", t.To.Phrase(), t.MaxAttempts)
	default:
		msg = t.To.Phrase()
	}
	fmt.Fprintf(d.out, "%5.1fs %-6s %s\n", d.since(), t.Server, msg)
	shown := path
	if len(shown) > 9 {
		shown = append([]string{"..."}, shown[len(shown)-8:]...)
	}
	fmt.Fprintf(d.out, "       %-6s path: %s\n", "", strings.Join(shown, " "))
	if t.Server == "flaky" && t.To == conn.Established && t.Attempt > 0 {
		d.recoveries++
		if d.recoveries == demoRecoveries {
			close(d.recovered)
		}
	}
}

// caller calls flaky's echo every 400ms until ctx is done.
func (d *demo) caller(ctx context.Context, reg *conn.ToolRegistry) {
	tick := time.NewTicker(400 * time.Millisecond)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		name := conn.PublicToolName("flaky", "echo")
		begin := time.Now()
		res, err := reg.Call(ctx, name, map[string]any{"text": fmt.Sprintf("call %d", n)})
		took := time.Since(begin)
		if ctx.Err() != nil {
			return
		}
		d.mu.Lock()
		switch {
		case err != nil:
			d.failed++
			d.slowestFail = max(d.slowestFail, took)
			fmt.Fprintf(d.out, "%5.1fs call   %s failed fast in %v: %v\n", d.since(), name, took.Round(time.Microsecond), err)
		case res.IsError:
			fmt.Fprintf(d.out, "%5.1fs call   %s: tool error\n", d.since(), name)
		default:
			d.ok++
			text := ""
			if len(res.Content) > 0 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			fmt.Fprintf(d.out, "%5.1fs call   %s -> %q in %v\n", d.since(), name, text, took.Round(time.Microsecond))
		}
		d.mu.Unlock()
	}
}
