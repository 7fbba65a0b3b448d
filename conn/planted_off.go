//go:build !simbugs

package conn

import (
	"context"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The seams of the planted bugs of package conn/internal/bugs. In every
// build without the tag simbugs each returns its argument unchanged, and
// the library reads no switch of the simulator; planted.go, built only
// with the tag, plants the bugs there.

// plantFence returns whether attemptDone's fence holds: fenced.
func plantFence(fenced bool) bool { return fenced }

// plantCloseBarrier returns the channel a closing generation waits on
// for its process to be gone: gone.
func plantCloseBarrier(gone <-chan struct{}) <-chan struct{} { return gone }

// plantCallContext returns the context a request is sent with: ctx.
func plantCallContext(ctx context.Context) context.Context { return ctx }

// plantToolPages returns the tools/list pages a listing reads: pages.
func plantToolPages(_ context.Context, _ *mcp.ClientSession, pages iter.Seq2[*mcp.Tool, error]) iter.Seq2[*mcp.Tool, error] {
	return pages
}
