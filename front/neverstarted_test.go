package front

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
)

// A server that has failed every attempt since it was started says so,
// with the attempts it has left, and tells the agent not to retry until
// it is up, instead of "try again after the next attempt".
func TestDescribeNeverStarted(t *testing.T) {
	clk := clock.NewMock()
	now := clk.Now()
	cause := errors.New("the server exited before answering: exit status 1; stderr: GITHUB_TOKEN is not set")
	tests := []struct {
		st   conn.Status
		want string
	}{
		{conn.Status{State: conn.FailedRetrying, Attempt: 3, MaxAttempts: 10, NextRetry: now.Add(2 * time.Second), LastErr: cause},
			`server "s": connection failed; retrying in 2s (attempt 3/10); tool "t" was not called; it has never started (7 more attempt(s) before it gives up): do not retry until it is up; it likely needs fixing (its command, env or credentials; mcpfsm status shows its cause)`},
		{conn.Status{State: conn.Connecting, Attempt: 4, MaxAttempts: 10},
			`server "s": reconnecting now (attempt 4/10); tool "t" was not called; it has never started (6 more attempt(s) before it gives up): do not retry until it is up; it likely needs fixing (its command, env or credentials; mcpfsm status shows its cause)`},
	}
	for _, tt := range tests {
		bs := newFakeBackends()
		bs.status = func(string) (conn.Status, bool) { return tt.st, true }
		f := New(Options{Registry: conn.NewRegistry(), Clock: clk, Backends: bs})
		if got := f.describe(backend{server: "s", f: f}, toolOp("t"), nil, ""); got != tt.want {
			t.Errorf("describe(%s) =\n%q, want\n%q", tt.st.State, got, tt.want)
		}
	}
}
