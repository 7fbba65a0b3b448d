package front

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// refusing is a transport whose every connect fails.
var refusing = conn.TransportFunc(func(context.Context) (mcp.Transport, error) {
	return nil, errors.New("the server exited before answering: exit status 1")
})

// An instance beside the shared one (a client's own) that has failed
// every attempt says so of itself, not of the server, when the server's
// shared instance has run: it is an outage of that instance, and the
// agent may try again after the next attempt. When the shared instance
// never ran either, the server has never started.
func TestNeverStartedIsTheInstancesWhenTheServerRan(t *testing.T) {
	clk := clock.NewMock()
	p := policy.Policy{Enabled: true, InitialDelay: 2 * time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 5}
	sup, err := conn.Start(context.Background(), conn.Config{Name: "s", Transport: refusing, Registry: conn.NewRegistry(), Reconnect: &p, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sup.Close(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_ = sup.Ready(ctx)
	eventually(t, "the instance's first failure", func() bool { return sup.Status().State == conn.FailedRetrying })
	for _, tt := range []struct {
		shared conn.Status
		want   string
	}{
		{conn.Status{State: conn.Established, Protocol: conn.ClassicProtocolVersion},
			`server "s": connection failed; retrying in 2s (attempt 1/5); tool "t" was not called; this instance of the server has never started, though the server has run (its shared instance is connected): try again after the next attempt`},
		{conn.Status{State: conn.FailedRetrying, Attempt: 2, MaxAttempts: 5},
			`server "s": connection failed; retrying in 2s (attempt 1/5); tool "t" was not called; it has never started (4 more attempt(s) before it gives up): do not retry until it is up; it likely needs fixing (its command, env or credentials; mcpfsm status shows its cause)`},
	} {
		bs := newFakeBackends()
		bs.status = func(string) (conn.Status, bool) { return tt.shared, true }
		f := New(Options{Registry: conn.NewRegistry(), Clock: clk, Backends: bs})
		if got := f.describe(backend{server: "s", sup: sup, own: true, f: f}, toolOp("t"), nil, ""); got != tt.want {
			t.Errorf("shared %s:\n%q, want\n%q", tt.shared.State, got, tt.want)
		}
	}
}
