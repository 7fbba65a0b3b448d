package fsm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// waitLimit bounds every wait for an event. Tests never sleep: they wait
// for the supervisor to report, and fail if it does not within this limit.
const waitLimit = 10 * time.Second

// The behaviours of conntest's server, by short names.
const (
	accept     = conntest.Accept
	refuse     = conntest.Refuse
	hang       = conntest.Hang
	held       = conntest.Held
	heldRefuse = conntest.HeldRefuse
)

type behaviour = conntest.Behaviour

// harness runs one supervisor against a conntest server on a mock clock.
type harness struct {
	t    *testing.T
	clk  *clock.Mock
	srv  *conntest.Server
	rec  *conntest.Recorder
	reg  *conn.ToolRegistry
	sup  *conn.Supervisor
	regs chan string // public names as they are registered

	release func() // ends the hold of holdFirstList
}

// signalRegistry wraps a registry and reports every registration.
type signalRegistry struct {
	*conn.ToolRegistry
	regs chan string
}

func (r signalRegistry) Register(t conn.Tool) (func(), error) {
	un, err := r.ToolRegistry.Register(t)
	if err == nil {
		r.regs <- t.Name
	}
	return un, err
}

// Replace signals every tool the supervisor swaps in.
func (r signalRegistry) Replace(old, next []conn.Tool) ([]func(), error) {
	uns, err := r.ToolRegistry.Replace(old, next)
	if err == nil {
		for _, t := range next {
			r.regs <- t.Name
		}
	}
	return uns, err
}

// option adjusts a harness before its supervisor starts.
type option func(*harness, *conn.Config)

func withPolicy(p policy.Policy) option {
	return func(_ *harness, c *conn.Config) { c.Reconnect = &p }
}
func strict() option { return func(_ *harness, c *conn.Config) { c.FailOnStartupError = true } }

// holdFirstList holds tools/list from the start, so that the first
// attempt's list is surely in flight when the test acts; h.release ends
// the hold.
func holdFirstList() option {
	return func(h *harness, _ *conn.Config) { h.release = h.holdLists() }
}

func newHarness(t *testing.T, plan []behaviour, tools []string, opts ...option) *harness {
	t.Helper()
	return newHarnessOn(t, conntest.NewServer(plan...), tools, opts...)
}

// newHarnessOn is newHarness on a server the test built.
func newHarnessOn(t *testing.T, srv *conntest.Server, tools []string, opts ...option) *harness {
	t.Helper()
	h := &harness{
		t:    t,
		clk:  clock.NewMock(),
		srv:  srv,
		rec:  conntest.NewRecorder(),
		reg:  conn.NewRegistry(),
		regs: make(chan string, 100000),
	}
	for _, name := range tools {
		h.srv.AddEchoTool(name)
	}
	cfg := conn.Config{
		Name:         "fx",
		Transport:    h.srv.Transport(),
		Registry:     signalRegistry{h.reg, h.regs},
		Clock:        h.clk,
		Logger:       h.rec.Logger(),
		OnTransition: h.rec.OnTransition,
	}
	for _, o := range opts {
		o(h, &cfg)
	}
	sup, err := conn.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	h.sup = sup
	t.Cleanup(h.close)
	return h
}

func (h *harness) addTool(name string) { h.srv.AddEchoTool(name) }
func (h *harness) crash()              { h.srv.Crash() }

// advance moves the mock clock.
func (h *harness) advance(d time.Duration) { h.clk.Add(d) }

func (h *harness) next() conn.Transition {
	h.t.Helper()
	return h.rec.Next(h.t, waitLimit)
}

// expect waits for transitions into the given states, in order.
func (h *harness) expect(states ...conn.State) []conn.Transition {
	h.t.Helper()
	return h.rec.Expect(h.t, waitLimit, states...)
}

func (h *harness) noTransition() {
	h.t.Helper()
	h.rec.NoTransition(h.t)
}

// waitOpened waits until the next generation's transport was opened.
func (h *harness) waitOpened() int {
	h.t.Helper()
	return waitFor(h.t, h.srv.Opened(), "a transport opened")
}

// nextHeld waits for the next held transport to be opened.
func (h *harness) nextHeld() *conntest.HeldTransport {
	h.t.Helper()
	ht := waitFor(h.t, h.srv.HeldTransports(), "a held transport opened")
	h.t.Cleanup(ht.Release)
	return ht
}

// holdLists makes every tools/list wait until release is called (the
// test's cleanup calls it too).
func (h *harness) holdLists() (release func()) {
	release = h.srv.HoldLists()
	h.t.Cleanup(release)
	return release
}

// waitListEntered waits until a tools/list request reached the hold.
func (h *harness) waitListEntered() {
	h.t.Helper()
	waitFor(h.t, h.srv.ListEntered(), "a tools/list at the hold")
}

// waitRegistered waits until a tool with the public name is registered.
func (h *harness) waitRegistered(name string) {
	h.t.Helper()
	for got := ""; got != name; {
		got = waitFor(h.t, h.regs, "registration of "+name)
	}
}

// drainRegs returns every public name registered and not yet read.
func (h *harness) drainRegs() []string {
	var out []string
	for {
		select {
		case n := <-h.regs:
			out = append(out, n)
		default:
			return out
		}
	}
}

func (h *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.sup.Close(ctx); err != nil && !errors.Is(err, conn.ErrIncompleteShutdown) {
		h.t.Errorf("Close: %v", err)
	}
	h.srv.Close()
}

// toolNames returns the registry's public tool names.
func (h *harness) toolNames() []string {
	var names []string
	for _, t := range h.reg.Tools() {
		names = append(names, t.Name)
	}
	return names
}

func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("no %s within %v", what, waitLimit)
		var zero T
		return zero
	}
}
