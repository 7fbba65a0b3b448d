//go:build simbugs

package conn

import (
	"context"
	"iter"

	"github.com/mcpfsm/mcpfsm/conn/internal/bugs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The seams of the planted bugs, open in a build with the tag simbugs
// (the simulator's -planted run): each plants its bug while its switch
// of package conn/internal/bugs is on. planted_off.go closes them in
// every other build.

// plantFence removes attemptDone's fence under bugs.NoGenerationFence.
func plantFence(fenced bool) bool { return fenced && !bugs.NoGenerationFence }

// plantCloseBarrier releases a closing generation at once under
// bugs.SkipCloseBarrier.
func plantCloseBarrier(gone <-chan struct{}) <-chan struct{} {
	if bugs.SkipCloseBarrier {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return gone
}

// plantCallContext sends a request with a context nothing cancels under
// bugs.CallIgnoresDeadline.
func plantCallContext(ctx context.Context) context.Context {
	if bugs.CallIgnoresDeadline {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// plantToolPages takes the first page for the whole listing under
// bugs.PublishBeforeListed.
func plantToolPages(ctx context.Context, sess *mcp.ClientSession, pages iter.Seq2[*mcp.Tool, error]) iter.Seq2[*mcp.Tool, error] {
	if bugs.PublishBeforeListed {
		return bugs.FirstPage(ctx, sess)
	}
	return pages
}
