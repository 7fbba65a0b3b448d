package fsm_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpfsm/mcpfsm/conn"
)

// The log line of a retry carries the stable attribute keys, and Status
// reports the backoff: attempt, delay and when the next attempt starts.
func TestLogAttributesAndStatusDuringBackoff(t *testing.T) {
	h := newHarness(t, []behaviour{accept}, []string{"a"}, withPolicy(small))
	h.expect(conn.Established)
	start := h.clk.Now()
	h.crash()
	tr := h.expect(conn.LostReconnecting)[0]

	st := h.sup.Status()
	want := conn.Status{
		Server: "fx", State: conn.LostReconnecting, Attempt: 1, MaxAttempts: 3,
		NextRetry: start.Add(time.Second), Generation: 1, Tools: []string{"mcp__fx__a"},
		Since: start, Delay: time.Second, Protocol: conn.DefaultProtocolVersion,
	}
	if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(conn.Status{}, "LastErr")); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	var lerr *conn.LostError
	if !errors.As(st.LastErr, &lerr) || lerr.Generation != 1 || !errors.As(tr.Err, &lerr) {
		t.Errorf("LastErr = %v, transition err = %v, want *LostError of generation 1", st.LastErr, tr.Err)
	}
	var failed *conn.FailedError
	if errors.As(st.LastErr, &failed) {
		t.Errorf("a loss reported as a failure: %v", st.LastErr)
	}

	var attrs map[string]string
	for _, r := range h.rec.Records(slog.LevelWarn) {
		if r.Msg == "connection lost; reconnecting in 1s (attempt 1/3); cause: the server closed the connection" {
			attrs = r.Attrs
		}
	}
	if attrs == nil {
		t.Fatal("no retry log line")
	}
	delete(attrs, "err")
	wantAttrs := map[string]string{"server": "fx", "state": "lost-reconnecting", "from": "established", "event": "connection-lost",
		"attempt": "1", "max_attempts": "3", "delay": "1s", "generation": "1"}
	if diff := cmp.Diff(wantAttrs, attrs); diff != "" {
		t.Errorf("log attributes (-want +got):\n%s", diff)
	}

	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	st = h.sup.Status()
	if st.Generation != 2 || !st.NextRetry.IsZero() || st.Delay != 0 || st.State != conn.Established {
		t.Errorf("after recovery: %+v", st)
	}
}
