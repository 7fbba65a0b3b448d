//go:build unix

package conn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

// A stdio server that exits at start, before answering anything, is
// reported as that, with its last words: not as a server that could not
// stand the server/discover probe, and the supervisor learns no protocol
// from it.
func TestExitBeforeAnsweringIsTheCause(t *testing.T) {
	sup, rec, logs := startShellServer(t, "github", "echo GITHUB_TOKEN is not set >&2; exit 1")
	rec.Expect(t, waitLimit, conn.FailedDisabled)
	st := sup.Status()
	want := "the server exited before answering: exit status 1; stderr: GITHUB_TOKEN is not set"
	var exit *conn.ServerExit
	if !errors.As(st.LastErr, &exit) || !exit.BeforeAnswering || !strings.HasSuffix(st.LastErr.Error(), want) {
		t.Errorf("LastErr = %v, want it to end %q", st.LastErr, want)
	}
	var warned []string // what an operator sees: warnings and errors
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warned = append(warned, line)
		}
	}
	for _, bad := range []string{"probe", "classic", "initialize"} {
		if strings.Contains(st.LastErr.Error(), bad) || strings.Contains(strings.Join(warned, "\n"), bad) {
			t.Errorf("the cause or a warning speaks of %q:\nLastErr: %v\nlog:\n%s", bad, st.LastErr, logs.String())
		}
	}
}
