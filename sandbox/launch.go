package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"

	"github.com/mcpfsm/mcpfsm/conn"
)

// Launch starts cmd, which has not started, inside the sandbox s: it is
// [Spec.Prepare] and [Run.Start] in one call, and makes *Spec a
// [conn.Launcher], so that a [conn.Stdio] whose Launcher is a *Spec runs
// its server sandboxed. logger receives what the sandbox refused. An
// [*UnavailableError] comes wrapped in a [*conn.PermanentError] that
// names its fix, so that the supervisor stops retrying what no wait can
// fix; errors.As still finds the *UnavailableError. The returned
// [conn.Launched] is the [*Run].
func (s *Spec) Launch(ctx context.Context, cmd *exec.Cmd, logger *slog.Logger) (conn.Launched, error) {
	r, err := s.Prepare(cmd, Options{Logger: logger})
	if err == nil {
		err = r.Start(ctx)
	}
	if err != nil {
		var ue *UnavailableError
		if errors.As(err, &ue) {
			err = &conn.PermanentError{Fix: ue.Fix, Err: err}
		}
		return nil, err
	}
	return r, nil
}

// *Spec starts conn's stdio servers in a sandbox.
var _ conn.Launcher = (*Spec)(nil)
