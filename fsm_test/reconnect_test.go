package fsm_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

const (
	missing = conntest.Missing
	busy    = conntest.Busy
)

// reconnect calls Reconnect bounded by waitLimit.
func (h *harness) reconnect() error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return h.sup.Reconnect(ctx)
}

// exhaust drives a small-policy supervisor whose server refuses from its
// first failure to exhausted.
func (h *harness) exhaust() { h.smallSchedule(conn.Exhausted) }

// smallSchedule drives a small-policy supervisor from its first failure
// through its three retries, the last of which leads to last.
func (h *harness) smallSchedule(last conn.State) {
	h.t.Helper()
	h.expect(conn.FailedRetrying)
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.FailedRetrying)
	h.advance(2 * time.Second)
	h.expect(conn.Connecting, conn.FailedRetrying)
	h.advance(4 * time.Second)
	h.expect(conn.Connecting, last)
}

// TestReconnectFromEveryWaitingState starts an attempt at once from each
// state Reconnect leaves: no clock moves, so nothing but Reconnect can
// have started it, and it returns nil once the server is back.
func TestReconnectFromEveryWaitingState(t *testing.T) {
	tests := []struct {
		name   string
		plan   []behaviour
		policy policy.Policy
		reach  func(h *harness) // drives the supervisor into the state
		from   conn.State
	}{
		{"failed-retrying", []behaviour{refuse, accept}, small,
			func(h *harness) { h.expect(conn.FailedRetrying) }, conn.FailedRetrying},
		{"lost-reconnecting", []behaviour{accept}, small,
			func(h *harness) { h.expect(conn.Established); h.crash(); h.expect(conn.LostReconnecting) }, conn.LostReconnecting},
		{"exhausted", []behaviour{refuse}, small,
			func(h *harness) { h.exhaust(); h.srv.Plan(accept) }, conn.Exhausted},
		{"failed-disabled", []behaviour{refuse, accept}, disabled,
			func(h *harness) { h.expect(conn.FailedDisabled) }, conn.FailedDisabled},
		{"lost-disabled", []behaviour{accept}, disabled,
			func(h *harness) { h.expect(conn.Established); h.crash(); h.expect(conn.LostDisabled) }, conn.LostDisabled},
		{"failed-permanent", []behaviour{missing, missing, accept}, small,
			func(h *harness) {
				h.expect(conn.FailedRetrying)
				h.advance(time.Second)
				h.expect(conn.Connecting, conn.FailedPermanent)
			}, conn.FailedPermanent},
		{"halted, once its process has exited", []behaviour{heldRefuse, accept}, small,
			func(h *harness) {
				ht := h.nextHeld()
				<-ht.Terminated()
				h.advance(conn.DefaultCloseTimeout)
				h.expect(conn.Halted)
				if err := h.reconnect(); !errors.Is(err, conn.ErrStillRunning) {
					h.t.Errorf("Reconnect while the process runs = %v, want ErrStillRunning", err)
				}
				h.noTransition()
				ht.Release()
				h.rec.WaitLog(h.t, waitLimit, slog.LevelInfo, "the server process that halted reconnecting has exited")
			}, conn.Halted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.plan, []string{"echo"}, withPolicy(tt.policy))
			tt.reach(h)
			opens := h.srv.Opens()
			if err := h.reconnect(); err != nil {
				t.Fatalf("Reconnect = %v, want nil", err)
			}
			trs := h.expect(conn.Connecting, conn.Established)
			if got := trs[0]; got.From != tt.from || got.Event != conn.EventReconnect {
				t.Errorf("first step %s -%s-> %s, want %s -reconnect-> connecting", got.From, got.Event, got.To, tt.from)
			}
			if got := h.srv.Opens(); got != opens+1 {
				t.Errorf("Reconnect opened %d transports, want 1", got-opens)
			}
			if diff := cmp.Diff([]string{"mcp__fx__echo"}, h.toolNames()); diff != "" {
				t.Errorf("tools after Reconnect (-want +got):\n%s", diff)
			}
			// The outage budget starts afresh: the next loss is retry 1.
			h.crash()
			if tt.policy.Enabled {
				if got := h.expect(conn.LostReconnecting)[0]; got.Attempt != 1 || got.Delay != time.Second {
					t.Errorf("loss after Reconnect: attempt %d delay %v, want 1 and 1s", got.Attempt, got.Delay)
				}
			}
		})
	}
}

func TestReconnectWhenEstablishedChangesNothing(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"echo"}, withPolicy(small))
	h.expect(conn.Established)
	if err := h.reconnect(); err != nil {
		t.Fatalf("Reconnect = %v", err)
	}
	h.noTransition()
	if got := h.srv.Opens(); got != 1 {
		t.Errorf("opened %d transports, want 1", got)
	}
}

// TestReconnectFailureStartsAFreshBudget: a Reconnect whose attempt fails
// returns that failure, and the outage starts over at retry 1.
func TestReconnectFailureStartsAFreshBudget(t *testing.T) {
	h := newHarness(t, []behaviour{refuse}, []string{"echo"}, withPolicy(small))
	h.exhaust()
	err := h.reconnect()
	var ferr *conn.FailedError
	if !errors.As(err, &ferr) || !strings.Contains(err.Error(), "generation 5 refused") {
		t.Fatalf("Reconnect = %v, want the *FailedError of generation 5", err)
	}
	if got := h.sup.State(); got != conn.FailedRetrying {
		t.Errorf("state when Reconnect returned its failure: %s, want failed-retrying", got)
	}
	trs := h.expect(conn.Connecting, conn.FailedRetrying)
	if got := trs[1]; got.Attempt != 1 || got.Delay != time.Second {
		t.Errorf("after a failed Reconnect: attempt %d delay %v, want 1 and 1s", got.Attempt, got.Delay)
	}
}

// TestProbeAfterExhaustion: with a ProbeInterval an exhausted supervisor
// tries once per interval; a failure returns to exhausted without a new
// backoff series, a success recovers with a fresh budget.
func TestProbeAfterExhaustion(t *testing.T) {
	p := small
	p.ProbeInterval = time.Minute
	h := newHarness(t, []behaviour{refuse}, []string{"echo"}, withPolicy(p))
	h.exhaust()
	ex := h.rec.Seen()[len(h.rec.Seen())-1]
	if ex.Delay != time.Minute || h.sup.Status().NextRetry != h.clk.Now().Add(time.Minute) {
		t.Errorf("exhausted: delay %v, next retry %v, want a probe in 1m", ex.Delay, h.sup.Status().NextRetry)
	}
	h.rec.WaitLog(t, waitLimit, slog.LevelError, "giving up after 3 consecutive failed reconnect attempts; tools unregistered; probing again in 1m0s;")
	h.advance(time.Minute - time.Millisecond)
	h.noTransition()
	h.advance(time.Millisecond)
	trs := h.expect(conn.Connecting, conn.Exhausted)
	if trs[0].Event != conn.EventProbe || trs[1].Event != conn.EventAttemptFailed || trs[1].Delay != time.Minute {
		t.Errorf("failed probe: %s then %s (delay %v), want probe then attempt-failed with the next probe in 1m",
			trs[0].Event, trs[1].Event, trs[1].Delay)
	}
	h.srv.Plan(accept)
	h.advance(time.Minute)
	h.expect(conn.Connecting, conn.Established)
	if diff := cmp.Diff([]string{"mcp__fx__echo"}, h.toolNames()); diff != "" {
		t.Errorf("tools after a successful probe (-want +got):\n%s", diff)
	}
	h.crash()
	if got := h.expect(conn.LostReconnecting)[0]; got.Attempt != 1 {
		t.Errorf("loss after a successful probe is attempt %d, want 1 (a fresh budget)", got.Attempt)
	}
	if got := h.srv.Opens(); got != 6 {
		t.Errorf("opened %d transports, want 4 + 2 probes = 6", got)
	}
}

// TestNoProbeByDefault: without a ProbeInterval exhausted stays put.
func TestNoProbeByDefault(t *testing.T) {
	h := newHarness(t, []behaviour{refuse}, []string{"echo"}, withPolicy(small))
	h.exhaust()
	h.advance(24 * time.Hour)
	h.noTransition()
	if got := h.srv.Opens(); got != 4 {
		t.Errorf("opened %d transports, want 4", got)
	}
}

// TestRetryAfterIsAFloor: a server's Retry-After lengthens the backoff
// and the probe interval, never shortens them.
func TestRetryAfterIsAFloor(t *testing.T) {
	t.Run("backoff", func(t *testing.T) {
		h := newHarness(t, []behaviour{busy, accept}, []string{"echo"}, withPolicy(small))
		tr := h.expect(conn.FailedRetrying)[0]
		var he *conn.HTTPError
		if tr.Delay != conntest.BusyRetryAfter || !errors.As(tr.Err, &he) || he.RetryAfter != conntest.BusyRetryAfter {
			t.Fatalf("delay %v, err %v; want the server's Retry-After %v", tr.Delay, tr.Err, conntest.BusyRetryAfter)
		}
		h.advance(conntest.BusyRetryAfter - time.Millisecond)
		h.noTransition()
		h.advance(time.Millisecond)
		h.expect(conn.Connecting, conn.Established)
	})
	t.Run("probe", func(t *testing.T) {
		p := small
		p.MaxAttempts = 1
		p.ProbeInterval = 10 * time.Second
		h := newHarness(t, []behaviour{refuse, busy}, []string{"echo"}, withPolicy(p))
		h.expect(conn.FailedRetrying)
		h.advance(time.Second)
		if got := h.expect(conn.Connecting, conn.Exhausted)[1]; got.Delay != conntest.BusyRetryAfter {
			t.Errorf("probe delay %v, want the server's Retry-After %v", got.Delay, conntest.BusyRetryAfter)
		}
	})
	t.Run("shorter than the schedule", func(t *testing.T) {
		p := small
		p.InitialDelay, p.MaxDelay = 2*time.Minute, 2*time.Minute
		h := newHarness(t, []behaviour{busy}, []string{"echo"}, withPolicy(p))
		if got := h.expect(conn.FailedRetrying)[0]; got.Delay != 2*time.Minute {
			t.Errorf("delay %v, want the schedule's 2m", got.Delay)
		}
	})
}

// TestPermanentFailureAfterOneConfirmation: a failure no wait can fix is
// retried once with the schedule's delay; the second in a row stops in
// failed-permanent with the tools unregistered and the fix logged.
func TestPermanentFailureAfterOneConfirmation(t *testing.T) {
	h := newHarness(t, []behaviour{accept, missing}, []string{"echo"}, withPolicy(small))
	h.expect(conn.Established)
	h.crash()
	h.expect(conn.LostReconnecting)
	h.advance(time.Second)
	first := h.expect(conn.Connecting, conn.FailedRetrying)[1]
	if !errors.Is(first.Err, conn.ErrPermanent) || first.Delay != 2*time.Second {
		t.Errorf("first permanent failure: err %v delay %v, want ErrPermanent and the schedule's 2s", first.Err, first.Delay)
	}
	h.advance(2 * time.Second)
	tr := h.expect(conn.Connecting, conn.FailedPermanent)[1]
	var pe *conn.PermanentError
	if !errors.As(tr.Err, &pe) || pe.Fix != conn.FixCommand {
		t.Fatalf("failed-permanent err = %v, want a *PermanentError with fix %q", tr.Err, conn.FixCommand)
	}
	if got := h.toolNames(); len(got) != 0 {
		t.Errorf("tools in failed-permanent: %v, want none", got)
	}
	h.advance(24 * time.Hour)
	h.noTransition()
	var line string
	for _, l := range h.rec.Logs(slog.LevelError) {
		line = l.Msg
	}
	want := "connection failed and no retry can fix it: install the command or fix its path; tools unregistered; " +
		"then call Reconnect, reload its configuration or restart the host; cause: open transport: generation 3: start conntest-server: " +
		`exec: "conntest-server": executable file not found in $PATH (install the command or fix its path)`
	if line != want {
		t.Errorf("error log\n got %q\nwant %q", line, want)
	}
}

// TestPermanentNeedsTwoInARow: a permanent failure between other failures
// is retried like any other.
func TestPermanentNeedsTwoInARow(t *testing.T) {
	h := newHarness(t, []behaviour{missing, refuse, missing, accept}, []string{"echo"}, withPolicy(small))
	h.smallSchedule(conn.Established)
}

// TestReconnectFromAuthRefused: once the credentials are fixed, Reconnect
// leaves auth-refused.
func TestReconnectFromAuthRefused(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "auth", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	serve := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var refuse atomic.Bool
	refuse.Store(true)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		serve.ServeHTTP(w, r)
	}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	tr := conn.Streamable(ts.URL)
	tr.Client = client
	rec := conntest.NewRecorder()
	reg := conn.NewRegistry()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: tr, Registry: reg, Reconnect: &small,
		Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	rec.Expect(t, waitLimit, conn.AuthRefused)
	refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := sup.Reconnect(ctx); err != nil {
		t.Fatalf("Reconnect = %v", err)
	}
	if trs := rec.Expect(t, waitLimit, conn.Connecting, conn.Established); trs[0].From != conn.AuthRefused {
		t.Errorf("reconnect from %s, want auth-refused", trs[0].From)
	}
	if got := len(reg.Tools()); got != 1 {
		t.Errorf("%d tools after Reconnect, want 1", got)
	}
}

// TestReconnectWhileDisposing: once Close has started, Reconnect fails
// with ErrClosed and starts nothing, even while disposal still waits for
// the old process.
func TestReconnectWhileDisposing(t *testing.T) {
	h := newHarness(t, []behaviour{held}, []string{"echo"}, withPolicy(small))
	ht := h.nextHeld()
	h.expect(conn.Established)
	closed := make(chan error, 1)
	go func() { closed <- h.sup.Close(context.Background()) }()
	h.expect(conn.Disposing)
	<-ht.Terminated() // disposal waits for this process
	if err := h.reconnect(); !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Reconnect while disposing = %v, want ErrClosed", err)
	}
	ht.Release()
	h.expect(conn.Disposed)
	if err := waitFor(t, closed, "Close"); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := h.reconnect(); !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Reconnect after Close = %v, want ErrClosed", err)
	}
	if got := h.srv.Opens(); got != 1 {
		t.Errorf("opened %d transports, want 1", got)
	}
}
