//go:build unix

package conn_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// A stdio server whose last words quote a database URL with its password
// exits: the exit and its words are the cause, the password is in none of
// the supervisor's errors, Status, transitions or log lines.
func TestStderrSecretsStayOutOfStatusErrorsAndLogs(t *testing.T) {
	const secret = "hunter2"
	sup, rec, logs := startShellServer(t, "leaky", "echo 'cannot reach postgres://app:"+secret+"@db/app' >&2; exit 3")
	trs := rec.Expect(t, waitLimit, conn.FailedDisabled)
	st := sup.Status()
	var exit *conn.ServerExit
	if !errors.As(st.LastErr, &exit) || exit.Code != 3 {
		t.Fatalf("LastErr = %v, want a *ServerExit with status 3", st.LastErr)
	}
	if want := "cannot reach postgres://***@db/app"; !strings.Contains(st.LastErr.Error(), want) {
		t.Errorf("LastErr = %v, want it to quote the stderr line as %q", st.LastErr, want)
	}
	if !strings.Contains(logs.String(), "status 3") {
		t.Fatalf("the exit is not logged: %s", logs.String())
	}
	for _, w := range secretSeen(secret, st, trs, logs.String()) {
		t.Errorf("the secret is in the %s", w)
	}
	for _, line := range exit.Stderr {
		if strings.Contains(line, secret) {
			t.Errorf("ServerExit.Stderr has the secret: %q", line)
		}
	}
}

// startShellServer supervises the shell script as a stdio server named
// name, without reconnects, logging at debug level into the returned
// buffer; the supervisor is closed when the test ends.
func startShellServer(t *testing.T, name, script string) (*conn.Supervisor, *conntest.Recorder, *syncBuffer) {
	t.Helper()
	rec := conntest.NewRecorder()
	logs := new(syncBuffer)
	p := policy.Default()
	p.Enabled = false
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: name, Transport: conn.Command("sh", "-c", script), Registry: conn.NewRegistry(), Reconnect: &p,
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Close(context.Background()) })
	return sup, rec, logs
}
