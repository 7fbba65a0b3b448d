package fsm_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// step is one stimulus of a script.
type step func(h *harness)

// The stimuli scripts are made of.
var (
	crash       step = func(h *harness) { h.crash() }
	advance          = func(d time.Duration) step { return func(h *harness) { h.advance(d) } }
	expect           = func(s ...conn.State) step { return func(h *harness) { h.expect(s...) } }
	closeSup    step = func(h *harness) { h.close() }
	waitOpened  step = func(h *harness) { h.waitOpened() }
	expectTools      = func(names ...string) step {
		return func(h *harness) {
			h.t.Helper()
			if diff := cmp.Diff(names, h.toolNames()); diff != "" {
				h.t.Errorf("registered tools (-want +got):\n%s", diff)
			}
		}
	}
)

func warnLine(msg string) conntest.LogLine { return conntest.LogLine{Level: slog.LevelWarn, Msg: msg} }
func errorLine(msg string) conntest.LogLine {
	return conntest.LogLine{Level: slog.LevelError, Msg: msg}
}

// small is a policy with short, distinct numbers: delays 1s, 2s, 4s, 4s;
// stability window 4s.
var small = policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}

var disabled = policy.Policy{Enabled: false, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}

// TestConnectionMachine runs scripts of stimuli against a supervisor and
// compares the whole sequence of transitions and the warn/error log lines.
func TestConnectionMachine(t *testing.T) {
	type rec struct {
		From, To conn.State
		Event    conn.Event
		Attempt  int
		Delay    time.Duration
	}
	tests := []struct {
		name   string
		plan   []behaviour
		policy policy.Policy
		script []step
		want   []rec
		logs   []conntest.LogLine
	}{
		{
			name:   "established connection lost then recovered",
			plan:   []behaviour{accept},
			policy: small,
			script: []step{expect(conn.Established), crash, expect(conn.LostReconnecting), advance(time.Second),
				expect(conn.Connecting, conn.Established), expectTools("mcp__fx__echo")},
			want: []rec{
				{conn.Connecting, conn.Established, conn.EventConnected, 0, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 1, time.Second},
				{conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 1, 0},
			},
			logs: []conntest.LogLine{warnLine("connection lost; reconnecting in 1s (attempt 1/3); cause: the server closed the connection")},
		},
		{
			name:   "initial failure then retry failure are both connection failed",
			plan:   []behaviour{refuse, refuse, accept},
			policy: small,
			script: []step{expect(conn.FailedRetrying), advance(time.Second), expect(conn.Connecting, conn.FailedRetrying),
				advance(2 * time.Second), expect(conn.Connecting, conn.Established)},
			want: []rec{
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 1, time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 2, 2 * time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 2, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 2, 0},
			},
			logs: []conntest.LogLine{
				warnLine("connection failed; retrying in 1s (attempt 1/3); cause: open transport: generation 1 refused"),
				warnLine("connection failed; retrying in 2s (attempt 2/3); cause: open transport: generation 2 refused"),
			},
		},
		{
			name:   "never up: tried 1+MaxAttempts times then exhausted",
			plan:   []behaviour{refuse},
			policy: small,
			script: []step{expect(conn.FailedRetrying), advance(time.Second), expect(conn.Connecting, conn.FailedRetrying),
				advance(2 * time.Second), expect(conn.Connecting, conn.FailedRetrying),
				advance(4 * time.Second), expect(conn.Connecting, conn.Exhausted), expectTools()},
			want: []rec{
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 1, time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 2, 2 * time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 2, 0},
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 3, 4 * time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 3, 0},
				{conn.Connecting, conn.Exhausted, conn.EventAttemptFailed, 3, 0},
			},
			logs: []conntest.LogLine{
				warnLine("connection failed; retrying in 1s (attempt 1/3); cause: open transport: generation 1 refused"),
				warnLine("connection failed; retrying in 2s (attempt 2/3); cause: open transport: generation 2 refused"),
				warnLine("connection failed; retrying in 4s (attempt 3/3); cause: open transport: generation 3 refused"),
				errorLine("giving up after 3 consecutive failed reconnect attempts; tools unregistered; fix the server, then reload its configuration or restart the host; cause: open transport: generation 4 refused"),
			},
		},
		{
			name:   "crash loop with brief successes still exhausts and unregisters tools",
			plan:   []behaviour{accept},
			policy: small,
			script: []step{
				expect(conn.Established), crash, expect(conn.LostReconnecting), advance(time.Second),
				expect(conn.Connecting, conn.Established), advance(time.Second), crash, expect(conn.LostReconnecting), advance(2 * time.Second),
				expect(conn.Connecting, conn.Established), advance(3*time.Second + 999*time.Millisecond), crash, expect(conn.LostReconnecting), advance(4 * time.Second),
				expect(conn.Connecting, conn.Established), expectTools("mcp__fx__echo"), crash, expect(conn.Exhausted), expectTools(),
			},
			want: []rec{
				{conn.Connecting, conn.Established, conn.EventConnected, 0, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 1, time.Second},
				{conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 1, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 2, 2 * time.Second},
				{conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed, 2, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 2, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 3, 4 * time.Second},
				{conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed, 3, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 3, 0},
				{conn.Established, conn.Exhausted, conn.EventConnectionLost, 3, 0},
			},
			logs: []conntest.LogLine{
				warnLine("connection lost; reconnecting in 1s (attempt 1/3); cause: the server closed the connection"),
				warnLine("connection lost; reconnecting in 2s (attempt 2/3); cause: the server closed the connection"),
				warnLine("connection lost; reconnecting in 4s (attempt 3/3); cause: the server closed the connection"),
				errorLine("giving up after 3 consecutive failed reconnect attempts; tools unregistered; fix the server, then reload its configuration or restart the host; cause: the server closed the connection"),
			},
		},
		{
			name:   "established loss followed by every retry failing exhausts and unregisters tools",
			plan:   []behaviour{accept, refuse},
			policy: small,
			script: []step{
				expect(conn.Established), expectTools("mcp__fx__echo"), crash, expect(conn.LostReconnecting), expectTools("mcp__fx__echo"),
				advance(time.Second), expect(conn.Connecting, conn.FailedRetrying),
				advance(2 * time.Second), expect(conn.Connecting, conn.FailedRetrying),
				advance(4 * time.Second), expect(conn.Connecting, conn.Exhausted), expectTools(),
			},
			want: []rec{
				{conn.Connecting, conn.Established, conn.EventConnected, 0, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 1, time.Second},
				{conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 2, 2 * time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 2, 0},
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 3, 4 * time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 3, 0},
				{conn.Connecting, conn.Exhausted, conn.EventAttemptFailed, 3, 0},
			},
			logs: []conntest.LogLine{
				warnLine("connection lost; reconnecting in 1s (attempt 1/3); cause: the server closed the connection"),
				warnLine("connection failed; retrying in 2s (attempt 2/3); cause: open transport: generation 2 refused"),
				warnLine("connection failed; retrying in 4s (attempt 3/3); cause: open transport: generation 3 refused"),
				errorLine("giving up after 3 consecutive failed reconnect attempts; tools unregistered; fix the server, then reload its configuration or restart the host; cause: open transport: generation 4 refused"),
			},
		},
		{
			name:   "uptime of exactly the stability window resets the budget",
			plan:   []behaviour{accept},
			policy: small,
			script: []step{
				expect(conn.Established), crash, expect(conn.LostReconnecting), advance(time.Second),
				expect(conn.Connecting, conn.Established), advance(4 * time.Second), crash, expect(conn.LostReconnecting),
			},
			want: []rec{
				{conn.Connecting, conn.Established, conn.EventConnected, 0, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 1, time.Second},
				{conn.LostReconnecting, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 1, 0},
				{conn.Established, conn.LostReconnecting, conn.EventConnectionLost, 1, time.Second},
			},
			logs: []conntest.LogLine{
				warnLine("connection lost; reconnecting in 1s (attempt 1/3); cause: the server closed the connection"),
				warnLine("connection lost; reconnecting in 1s (attempt 1/3); cause: the server closed the connection"),
			},
		},
		{
			name:   "reconnect disabled after a loss keeps the tools and reports manual recovery",
			plan:   []behaviour{accept},
			policy: disabled,
			script: []step{expect(conn.Established), crash, expect(conn.LostDisabled), expectTools("mcp__fx__echo")},
			want: []rec{
				{conn.Connecting, conn.Established, conn.EventConnected, 0, 0},
				{conn.Established, conn.LostDisabled, conn.EventConnectionLost, 0, 0},
			},
			logs: []conntest.LogLine{
				errorLine("connection lost and reconnect is disabled; registered tools will fail until you fix the server, then reload its configuration or restart the host; cause: the server closed the connection"),
			},
		},
		{
			name:   "reconnect disabled after a failed first connect reports no tools",
			plan:   []behaviour{refuse},
			policy: disabled,
			script: []step{expect(conn.FailedDisabled), expectTools()},
			want: []rec{
				{conn.Connecting, conn.FailedDisabled, conn.EventAttemptFailed, 0, 0},
			},
			logs: []conntest.LogLine{
				errorLine("connection failed and reconnect is disabled; no tools were registered; fix the server, then reload its configuration or restart the host; cause: open transport: generation 1 refused"),
			},
		},
		{
			name:   "a server that never answers initialize fails after ConnectTimeout",
			plan:   []behaviour{hang, accept},
			policy: small,
			script: []step{waitOpened, advance(conn.DefaultConnectTimeout), expect(conn.FailedRetrying), advance(time.Second),
				expect(conn.Connecting, conn.Established)},
			want: []rec{
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 1, time.Second},
				{conn.FailedRetrying, conn.Connecting, conn.EventBackoffElapsed, 1, 0},
				{conn.Connecting, conn.Established, conn.EventConnected, 1, 0},
			},
			logs: []conntest.LogLine{
				warnLine("connection failed; retrying in 1s (attempt 1/3); cause: no answer within ConnectTimeout (30s): initialize: context deadline exceeded"),
			},
		},
		{
			name:   "dispose during backoff cancels it",
			plan:   []behaviour{refuse},
			policy: small,
			script: []step{expect(conn.FailedRetrying), closeSup, expect(conn.Disposing, conn.Disposed), advance(time.Hour)},
			want: []rec{
				{conn.Connecting, conn.FailedRetrying, conn.EventAttemptFailed, 1, time.Second},
				{conn.FailedRetrying, conn.Disposing, conn.EventDispose, 0, 0},
				{conn.Disposing, conn.Disposed, conn.EventDisposed, 0, 0},
			},
			logs: []conntest.LogLine{
				warnLine("connection failed; retrying in 1s (attempt 1/3); cause: open transport: generation 1 refused"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.plan, []string{"echo"}, withPolicy(tc.policy))
			for _, s := range tc.script {
				s(h)
			}
			h.close()
			var got []rec
			for _, tr := range h.rec.Seen() {
				got = append(got, rec{tr.From, tr.To, tr.Event, tr.Attempt, tr.Delay})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.logs, h.rec.Logs(slog.LevelWarn)); diff != "" {
				t.Errorf("warn/error logs (-want +got):\n%s", diff)
			}
			if h.clk.Now().After(time.Unix(0, 0).Add(time.Hour)) && tc.name != "dispose during backoff cancels it" {
				t.Errorf("clock ran past an hour: %v", h.clk.Now())
			}
		})
	}
}
