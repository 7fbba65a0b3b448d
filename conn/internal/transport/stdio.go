package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/proc"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the single-use SDK transport of one stdio server process: it
// starts the process when the SDK connects it, and implements [Owned].
type Stdio struct {
	spec proc.Spec // the process to start, without the reports of its end

	mu         sync.Mutex
	sink       Sink // told of the process's end (ReportTo); may be nil
	proc       *proc.Process
	terminated bool // Terminate ran before a process existed: never start one
}

// NewStdio returns a transport that starts the process spec describes.
func NewStdio(spec proc.Spec) *Stdio { return &Stdio{spec: spec} }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Connect starts the process. The SDK calls it once, from Client.Connect.
func (t *Stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminated || t.proc != nil {
		return nil, errors.New("conn: stdio transport already used or terminated")
	}
	p, err := proc.Start(ctx, t.processSpec())
	if err != nil {
		return nil, err
	}
	t.proc = p
	inner, err := (&mcp.IOTransport{Reader: p.Stdout(), Writer: p.Stdin()}).Connect(ctx)
	if err != nil {
		_ = p.Stdout().Close()
		p.Terminate(0)
		return nil, err
	}
	return &stdioConn{Connection: inner, t: t, sink: t.sink, p: p}, nil
}

// processSpec is the process t starts, reporting its end to t's sink.
func (t *Stdio) processSpec() proc.Spec {
	spec := t.spec
	if sink := t.sink; sink != nil {
		spec.OnExit = func() { sink.SessionEnded(t, true) }
		spec.OnGone = func() { sink.ProcessGone(t) }
		if spec.Launch != nil {
			spec.Logger = sink.ProcessLogger()
		}
	}
	return spec
}

// ReportTo implements Owned: the process it starts reports its exit and
// its connection's close to sink.
func (t *Stdio) ReportTo(sink Sink) {
	t.mu.Lock()
	t.sink = sink
	t.mu.Unlock()
}

// The stdio transport is the one whose process conn runs: without this,
// its exits would be learnt late and its shutdown never fitted into
// CloseTimeout.
var _ Owned = (*Stdio)(nil)

// Terminate implements conn's Terminator.
func (t *Stdio) Terminate() <-chan struct{} { return t.TerminateWithin(0) }

// TerminateWithin is Terminate with the grace periods shortened, when
// within is positive, so that the group is killed well within it.
func (t *Stdio) TerminateWithin(within time.Duration) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.terminated = true
	if t.proc == nil {
		return closedChan
	}
	return t.proc.Terminate(within)
}

// TailLines bounds how many of the server's last standard error lines
// Exit quotes (conn's StderrTailLines); MaxCauseBytes bounds their size.
const TailLines = 5

// The tail a process keeps must hold what Exit may quote.
var _ [proc.TailBytes - MaxCauseBytes]struct{}

// Exit is how the process ended, once it has, with its last standard
// error lines (at most TailLines lines and MaxCauseBytes bytes, control
// characters replaced by spaces and what looks like a secret redacted,
// oldest first). ok is false before the process started and while it
// runs (the barrier expired).
func (t *Stdio) Exit() (e proc.Exit, stderr []string, ok bool) {
	t.mu.Lock()
	p := t.proc
	t.mu.Unlock()
	if p == nil {
		return proc.Exit{}, nil, false
	}
	if e, ok = p.Exit(); !ok {
		return e, nil, false
	}
	return e, tailLines(p.StderrTail()), true
}

// tailLines returns the last TailLines non-empty lines of b, at most
// MaxCauseBytes in all (the newest kept).
func tailLines(b []byte) []string {
	var out []string
	size := 0
	raw := bytes.Split(b, []byte("\n"))
	for i := len(raw) - 1; i >= 0 && len(out) < TailLines; i-- {
		line := redact.Line(quote(raw[i], true))
		if line == "" {
			continue
		}
		if size+len(line) > MaxCauseBytes {
			break
		}
		size += len(line)
		out = append(out, line)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// stdioConn is the SDK connection to one server process. Reads go through
// the SDK's newline-delimited reader; writes go through the process's own
// line writer, because the SDK's holds a mutex across a blocking pipe
// write and ignores the context: a server that stops reading its stdin
// would then block every later write, cancellation notices included, for
// ever.
type stdioConn struct {
	mcp.Connection // the SDK's connection, used for Read and Close
	t              *Stdio
	sink           Sink // t's, when connected; may be nil
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
// wait for the process: Terminate is the barrier.
func (c *stdioConn) Close() error {
	if c.sink != nil {
		c.sink.SessionEnded(c.t, false)
	}
	err := c.Connection.Close()
	c.p.StopWrites()
	c.p.Terminate(0)
	return err
}
