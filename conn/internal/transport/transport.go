// Package transport holds conn's own transports and the wire around every
// other one: the stdio transport that runs a server process (package
// proc) and speaks MCP over its pipes, the Streamable HTTP transport with
// its record of how the server answered, and the wire, which tells a
// generation what reached its server. It also judges what a request's
// error says of the connection: whether the server answered, or is gone.
//
// It knows nothing of package conn: a transport reports the end of its
// session and of its process to a [Sink] (conn's generation), and what it
// records of the server (an exit and its last words, an HTTP error answer)
// conn words as its own errors.
package transport

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sink is where a transport reports the end of its session and of its
// process, as they happen: the generation that opened the transport. It is
// set before the transport is connected, so nothing is reported before
// there is someone to hear it, and a report is an event of the generation
// machine, whose table ignores what comes too late or twice.
type Sink interface {
	// SessionEnded: the process exited (exited, on the goroutine that
	// reaps it, which blocks on nothing), or the connection closed.
	SessionEnded(src any, exited bool)
	// ProcessGone: the process (group) is gone, and the channel its
	// Terminate returns is closed; on the goroutine that reaped it.
	ProcessGone(src any)
	// ProcessLogger is the logger, with the server and generation, of
	// what the process's launcher reports, such as a connection its
	// sandbox refused.
	ProcessLogger() *slog.Logger
}

// Owned is a transport whose process the package runs itself (the stdio
// transport): it reports the process's end to a Sink (src in its reports
// is the transport itself) and fits its shutdown schedule into a deadline.
// It is the one optional interface a generation asserts beyond conn's
// Terminator, whose Terminate it has.
type Owned interface {
	Terminate() <-chan struct{}
	ReportTo(Sink)
	TerminateWithin(time.Duration) <-chan struct{}
}

// MaxCauseBytes bounds the server's own words an error quotes: the start
// of an HTTP error body, the end of a stdio server's standard error (conn's
// MaxCauseBytes).
const MaxCauseBytes = 2048

// quote makes the server's words safe for one log line: at most
// MaxCauseBytes (the start, or with tail the end), valid UTF-8, control
// characters as spaces, trimmed.
func quote(b []byte, tail bool) string {
	if len(b) > MaxCauseBytes {
		if tail {
			b = b[len(b)-MaxCauseBytes:]
		} else {
			b = b[:MaxCauseBytes]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// ConnectionGone reports errors that mean the server went away under the
// call rather than answered it.
func ConnectionGone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED)
}

// Answered reports whether err is the server's JSON-RPC error answer: the
// server read the request and replied. The SDK also reports its own
// transport failures as JSON-RPC errors, with codes of its own; those are
// no answer.
func Answered(err error) bool {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || ConnectionGone(err) {
		return false
	}
	switch rpc.Code {
	case codeUnknown, codeClientClosing, codeServerClosing, codeRejected:
		return false
	}
	return true
}

// The codes the SDK's JSON-RPC layer uses for its own failures.
const (
	codeUnknown       = -32001
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)
