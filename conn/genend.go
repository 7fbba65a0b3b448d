package conn

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reportsEnd reports whether g's transport tells of the session's end
// (SessionEnded): a stdio process, or the wire around any transport but
// Streamable HTTP.
func (g *generation) reportsEnd() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.transport.(transport.Owned)
	return ok || g.wire != nil
}

// SessionEnded implements transport.Sink: the process of g's transport exited,
// or its connection closed. Reports of a transport g no longer uses (the
// first process of an attempt that learnt the classic handshake) are no
// news. While the attempt runs, the end is kept for the attempt's outcome.
func (g *generation) SessionEnded(src any, exited bool) {
	g.mu.Lock()
	if src != any(g.transport) && (g.wire == nil || src != any(g.wire)) {
		g.mu.Unlock()
		return
	}
	if g.lifeState() == genConnecting {
		if !g.life.early {
			g.life.early, g.life.earlyExited = true, exited
		}
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.ended(exited, exited)
}

// ended is the end of g's session as went-bad. An exit is reported by the
// goroutine that reaps the process, which blocks on nothing: the
// generation closes there (own), and its release reports the loss from
// there too, once the process is reaped. The SDK retires pending calls
// once it reads the rest of the pipe (a dead server's last replies are
// delivered), so the calls are not cancelled (natural). A closed
// connection is waited out off the caller (the SDK's reader) for the
// session's error.
func (g *generation) ended(exited, own bool) {
	s := g.sup
	if exited {
		g.fire(genWentBad, genPayload{at: s.clk.Now(), err: errServerExited, natural: true, own: own})
		return
	}
	// Counted as a worker under the lock, only while up: disposal, which
	// waits for the workers, first moves every generation past up under
	// the same lock, so no worker is added once it waits.
	g.mu.Lock()
	if g.lifeState() != genUp {
		g.mu.Unlock()
		return // already going: a shutdown closed the connection
	}
	s.workers.Add(1)
	g.mu.Unlock()
	go func() {
		defer s.workers.Done()
		err := g.sess.Wait()
		g.fire(genWentBad, genPayload{at: s.clk.Now(), err: err, natural: true})
	}()
}

// ProcessGone implements transport.Sink: the release, when g is shutting down;
// earlier, no news (shutdownWork finds the process gone).
func (g *generation) ProcessGone(src any) {
	g.mu.Lock()
	mine := src == any(g.transport)
	g.mu.Unlock()
	if mine {
		g.fire(genRelease, genPayload{own: true})
	}
}

// markBad reports the first bad news about an established connection;
// later news, and news about a generation not up, changes nothing.
func (g *generation) markBad(at time.Time, err error) {
	g.fire(genWentBad, genPayload{at: at, err: err})
}

// causedError is a generation's error with what the server did.
type causedError struct {
	err   error // what the SDK saw
	cause error // what the server did
}

// Error puts what the server did first: it is what an operator acts on.
func (e *causedError) Error() string { return fmt.Sprintf("%v (%v)", e.cause, e.err) }

func (e *causedError) Unwrap() []error { return []error{e.err, e.cause} }

// withCause adds what the server did to a generation's error (err may be
// nil: a session that ended without an error).
func (g *generation) withCause(err error) error {
	g.mu.Lock()
	t := g.transport
	g.mu.Unlock()
	cause := transportCause(t)
	switch {
	case cause == nil:
		return err
	case err == nil:
		return cause
	}
	return &causedError{err: err, cause: cause}
}

// ProcessLogger implements transport.Sink.
func (g *generation) ProcessLogger() *slog.Logger {
	return g.sup.cfg.Logger.With("server", g.sup.cfg.Name, "generation", g.id)
}

// transportCause is what the server did that a generation's error alone
// does not say, as the package's own transports recorded it: a stdio
// server's exit and last words, an HTTP server's last error answer; nil
// when there is none.
func transportCause(t mcp.Transport) error {
	switch t := t.(type) {
	case *transport.Stdio:
		if e, stderr, ok := t.Exit(); ok {
			return &ServerExit{Code: e.Code, Signal: e.Signal, BySupervisor: e.BySupervisor, Limit: e.Limit, Stderr: stderr}
		}
	case *transport.HTTP:
		if a := t.LastAnswer(); a != nil {
			return &HTTPError{StatusCode: a.StatusCode, Status: a.Status, Body: a.Body, RetryAfter: a.RetryAfter}
		}
	}
	return nil
}
