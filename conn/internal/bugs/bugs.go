// Package bugs holds switches that plant known bugs in package conn, so
// that the simulator (package conn/sim) can show that it finds each of
// them. The switches are variables only in a build with the tag simbugs
// (go test -tags simbugs ./conn/sim -planted, as CI runs it), where a test
// of the simulator sets one between runs, when no supervisor is running.
// In every other build they are constants, false. Package conn reads them
// only in planted.go, which is built with the tag alone; without it,
// planted_off.go's seams return their arguments unchanged, so the planted
// bugs are not in the library and no file of it reads a switch.
//
// Nothing else may set them: a switch that is on breaks a promise of
// package conn on purpose.
package bugs

import (
	"context"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
