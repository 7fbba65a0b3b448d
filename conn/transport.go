package conn

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport opens a fresh MCP transport for every generation. An SDK
// transport is single-use (it binds one connection for life), so a
// Supervisor asks for a new one on each attempt.
type Transport interface {
	Open(ctx context.Context) (mcp.Transport, error)
}

// TransportFunc adapts a function to [Transport], for any SDK transport the
// package has no ready-made Transport for (stdio has [Command], Streamable
// HTTP has [Streamable]), and for in-process servers in tests
// (mcp.NewInMemoryTransports, or package conntest).
type TransportFunc func(ctx context.Context) (mcp.Transport, error)

// Open calls f.
func (f TransportFunc) Open(ctx context.Context) (mcp.Transport, error) { return f(ctx) }

// Terminator is an optional interface of an mcp.Transport returned by
// [Transport.Open] that owns a server process. Terminate stops the process
// if it still runs (gracefully first) and returns a channel that is closed
// once the process, and everything it started, is gone. It must be
// idempotent and must not block.
//
// A Supervisor waits for this channel, bounded by Config.CloseTimeout,
// before it starts the next generation: this close barrier is what
// guarantees that two processes of one server are never alive at once.
// The supervisor terminates the process beside the session's Close, not
// after it, since that Close may wait on the server. Transports without
// it own no process: they are released at once, and their session's
// Close goes on in the background (Close waits for it, bounded by
// CloseTimeout).
type Terminator interface {
	Terminate() <-chan struct{}
}

// validator is implemented by the package's own transports, so that Start
// rejects their bad settings instead of failing every attempt.
type validator interface{ validate() error }
