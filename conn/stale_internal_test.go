package conn

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLines is a slog handler that keeps messages.
type logLines struct{ msgs chan string }

func (l logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l logLines) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.msgs <- r.Message:
	default:
	}
	return nil
}
func (l logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logLines) WithGroup(string) slog.Handler      { return l }

// memTransport connects each generation to srv in memory and hands the
// server's session to sessions.
func memTransport(srv *mcp.Server, sessions chan<- *mcp.ServerSession) Transport {
	return TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		sessions <- ss
		return ct, nil
	})
}

// oneToolServer is an in-process server named name with one tool, "a".
func oneToolServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name}, nil)
	srv.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}}, nil)
	return srv
}

// loopIdle reports whether no goroutine runs s's loop.
func loopIdle(s *Supervisor) bool {
	s.turns.mu.Lock()
	defer s.turns.mu.Unlock()
	return !s.turns.running
}

// waitFor waits, at most 10 s, for ok to hold, and fails t if it does not.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		runtime.Gosched()
	}
}

// onLoop runs f on s's loop and waits for it.
func onLoop(s *Supervisor, f func()) {
	done := make(chan struct{})
	s.post(func() { f(); close(done) })
	<-done
}

// expectTransition fails t unless the next transition on trans, within
// 10 s, enters want.
func expectTransition(t *testing.T, trans <-chan Transition, want State) {
	t.Helper()
	select {
	case tr := <-trans:
		if tr.To != want {
			t.Fatalf("transition to %s, want %s", tr.To, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no transition to %s", want)
	}
}

// TestStaleGenerationIsInert checks the fence from inside: once a
// generation is retired, its notification handler and a late re-sync
// result change nothing, while the current generation is untouched.
func TestStaleGenerationIsInert(t *testing.T) {
	srv := oneToolServer("stale")
	sessions := make(chan *mcp.ServerSession, 4)
	trans := make(chan Transition, 16)
	logs := logLines{msgs: make(chan string, 64)}
	clk := clock.NewMock()
	reg := NewRegistry()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	sup, err := Start(context.Background(), Config{
		Name: "fx", Registry: reg, Clock: clk, Reconnect: &p, Logger: slog.New(logs),
		OnTransition: func(tr Transition) { trans <- tr },
		Transport:    memTransport(srv, sessions),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	expect := func(want State) { t.Helper(); expectTransition(t, trans, want) }

	expect(Established)
	old, _ := reg.Lookup("mcp__fx__a")
	stale := old.gen
	_ = (<-sessions).Close() // the server side goes away: connection lost
	expect(LostReconnecting)
	clk.Add(time.Second)
	expect(Connecting)
	expect(Established)
	<-sessions

	// The stale generation's handler fires, as a late SDK callback would.
	stale.signalChanged()
	onLoop(sup, sup.listChanged)
	// And a re-sync result of the stale generation arrives late.
	ghost := Tool{Name: "mcp__fx__ghost", Server: "fx", Raw: &mcp.Tool{Name: "ghost"}, gen: stale}
	onLoop(sup, func() { sup.resyncDone(stale, []Tool{ghost}, nil) })

	// Released, the retired generation holds no close-timeout timer that
	// would keep it in memory for CloseTimeout.
	if stale.expiry.Stop() {
		t.Error("the retired generation's close-timeout timer was still armed after its release")
	}

	var cur *generation
	onLoop(sup, func() { cur = sup.current })
	if cur == stale {
		t.Fatal("the stale generation is still current")
	}
	if st := stale.syncState(); st != syncIdle {
		t.Errorf("stale generation's sync machine = %s, want %s (untouched)", st, syncIdle)
	}
	if !stale.changed.Load() {
		t.Error("the stale notification was consumed")
	}
	if st := cur.syncState(); st != syncIdle {
		t.Errorf("current generation's sync machine = %s, want %s", st, syncIdle)
	}
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Name)
		if tool.gen != cur {
			t.Errorf("tool %s belongs to generation %d, want the current %d", tool.Name, tool.gen.id, cur.id)
		}
	}
	if strings.Join(names, ",") != "mcp__fx__a" {
		t.Errorf("tools = %v, want mcp__fx__a only", names)
	}
	for len(logs.msgs) > 0 {
		if msg := <-logs.msgs; strings.HasPrefix(msg, "tool list changed") || strings.HasPrefix(msg, "tool re-sync failed") {
			t.Errorf("stale generation logged %q", msg)
		}
	}
}
