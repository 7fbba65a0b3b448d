package sandbox

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
)

// launched is what Launch returns: the same interface type as package
// conn's Launched, written here so that package sandbox need not import
// conn (nor make every importer of package config link the MCP SDK).
type launched = interface {
	StderrWatch() io.Writer
	Limit(st *os.ProcessState) string
	Close()
}

// Launch starts cmd, which has not started, inside the sandbox s: it is
// [Spec.Prepare] and [Run.Start] in one call, and makes *Spec a
// conn.Launcher, so that a conn.Stdio whose Launcher is a *Spec runs its
// server sandboxed. logger receives what the sandbox refused. An
// [*UnavailableError] names its fix by its PermanentFix method, so that
// the supervisor stops retrying what no wait can fix (conn wraps it in a
// conn.PermanentError; errors.As still finds the *UnavailableError). The
// returned value is the [*Run].
func (s *Spec) Launch(ctx context.Context, cmd *exec.Cmd, logger *slog.Logger) (launched, error) {
	r, err := s.Prepare(cmd, Options{Logger: logger})
	if err == nil {
		err = r.Start(ctx)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}
