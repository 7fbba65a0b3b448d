package conn

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// withTimeout is context.WithTimeout on the supervisor's clock. It does not
// use clock.Mock's own WithTimeout, whose Err reads its state without a
// lock (a data race under -race); the expiry is the context's cause, so
// context.Cause(ctx) reports context.DeadlineExceeded.
func withTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clk.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
