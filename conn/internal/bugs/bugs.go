// Package bugs holds switches that plant known bugs in package conn, so
// that the simulator (package conn/sim) can show that it finds each of
// them. Every switch is false except while a test of the simulator sets
// it, between runs, when no supervisor is running; conn reads a switch
// where the bug would be, so a switch that is off costs one load of a
// package variable and a branch that is never taken.
//
// Nothing else may set them: a switch that is on breaks a promise of
// package conn on purpose.
package bugs

import (
	"context"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The planted bugs.
var (
	// NoGenerationFence removes the fence of the supervisor's attemptDone
	// (conn/loop.go): the outcome of an attempt the supervisor no
	// longer waits for, because disposal retired it, is acted on.
	NoGenerationFence bool
	// SkipCloseBarrier releases a closing generation at once, without
	// waiting for its transport's process to be gone (conn/loop.go),
	// so the next generation may start beside it.
	SkipCloseBarrier bool
	// CallIgnoresDeadline sends a request with a context that neither the
	// caller's deadline, CallTimeout nor the generation's shutdown cancels
	// (conn/session.go).
	CallIgnoresDeadline bool
	// PublishBeforeListed takes the first page of a tools/list for the
	// whole listing (conn/session.go): a listing is published before it is
	// complete.
	PublishBeforeListed bool
)

// FirstPage is the listing of PublishBeforeListed: the tools of the first
// page of sess's tools/list, as if there were no more.
func FirstPage(ctx context.Context, sess *mcp.ClientSession) iter.Seq2[*mcp.Tool, error] {
	return func(yield func(*mcp.Tool, error) bool) {
		res, err := sess.ListTools(ctx, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, t := range res.Tools {
			if !yield(t, nil) {
				return
			}
		}
	}
}
