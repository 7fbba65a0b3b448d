package conn

import (
	"context"
	"fmt"

	"github.com/mcpfsm/mcpfsm/conn/internal/proc"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioConn is the SDK connection to one server process. Reads go through
// the SDK's newline-delimited reader; writes go through the process's own
// line writer, because the SDK's holds a mutex across a blocking pipe
// write and ignores the context: a server that stops reading its stdin
// would then block every later write, cancellation notices included, for
// ever.
type stdioConn struct {
	mcp.Connection // the SDK's connection, used for Read and Close
	t              *stdioTransport
	sink           endSink // t's, when connected; may be nil
	p              *proc.Process
}

// Write sends msg as one line, or returns ctx's error when ctx ends first.
// A line handed to the pipe is written whole, even after ctx ended, so the
// stream never carries half a message.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	return c.p.WriteLine(ctx, append(data, '\n'))
}

// Close closes both pipes and starts terminating the process; it does not
// wait for the process: [Terminator] is the barrier.
func (c *stdioConn) Close() error {
	if c.sink != nil {
		c.sink.sessionEnded(c.t, false)
	}
	err := c.Connection.Close()
	c.p.StopWrites()
	c.p.Terminate(0)
	return err
}
