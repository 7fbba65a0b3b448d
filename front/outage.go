// How the front words a request it could not serve: the server, its
// state and next attempt, and what happened to the request.

package front

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
	"github.com/mcpfsm/mcpfsm/front/internal/slots"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errorResult is a tool error result (isError) that says text.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// serverOf is the server part of a public tool name.
func serverOf(public string) string {
	server, _, _ := conn.SplitToolName(public)
	return server
}

// operation names what a request of the front client asked of a server,
// for the outage messages.
type operation struct {
	what    string // `tool "x"`, `resource "u"`...
	undone  string // what happened when nothing was sent: "was not called"
	partial string // and when the connection ended under it
}

func toolOp(tool string) operation {
	return operation{what: fmt.Sprintf("tool %q", tool), undone: "was not called",
		partial: fmt.Sprintf("the connection ended during the call of tool %q, which may or may not have taken effect", tool)}
}

func resourceOp(uri string) operation {
	return operation{what: fmt.Sprintf("resource %q", uri), undone: "was not read",
		partial: fmt.Sprintf("the connection ended while resource %q was read", uri)}
}

func promptOp(name string) operation {
	return operation{what: fmt.Sprintf("prompt %q", name), undone: "was not fetched",
		partial: fmt.Sprintf("the connection ended while prompt %q was fetched", name)}
}

// describe says why op was not (or not fully) done: the server, the
// state of the instance be and when its next attempt is, then what
// happened to op.
func (f *Front) describe(be backend, op operation, err error, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q: ", be.server)
	st, ok := be.status()
	// A server that has failed every attempt since it was started
	// (none ever negotiated a protocol) is likely to fail the rest: a
	// missing token, a bad command. Say so, so an agent stops retrying.
	neverStarted := ok && st.Protocol == "" && st.Attempt > 0 &&
		(st.State == conn.FailedRetrying || st.State == conn.Connecting)
	// That is true of an instance beside the shared one (a client's own,
	// or a shared server's 2026-07-28 one) that never started, but not of
	// its server when the shared instance has run: then it is an outage.
	var sharedRan *conn.Status
	if sst, sok := f.status(be.server); neverStarted && be.sup != nil && sok && sst.Protocol != "" {
		sharedRan = &sst
	}
	switch {
	case !ok:
		b.WriteString("unavailable")
	case st.State == conn.LostReconnecting || st.State == conn.FailedRetrying:
		wait := max(st.NextRetry.Sub(f.opts.Clock.Now()), 0)
		fmt.Fprintf(&b, "%s in %v (attempt %d/%d)", st.State.Phrase(), roundWait(wait), st.Attempt, st.MaxAttempts)
	case st.State == conn.Connecting && st.Attempt > 0:
		fmt.Fprintf(&b, "reconnecting now (attempt %d/%d)", st.Attempt, st.MaxAttempts)
	case st.State == conn.Established:
		b.WriteString("connected again") // it came back since the call failed
	case st.State == conn.Disposed:
		b.WriteString(conn.Disposing.Phrase()) // Close enters both at one instant: which one is read is chance
	default:
		b.WriteString(st.State.Phrase())
	}
	var cause error
	if err != nil {
		cause = errors.Unwrap(err)
	}
	switch {
	case why != "":
		fmt.Fprintf(&b, "; %s: %s", op.what, why)
	case cause != nil:
		fmt.Fprintf(&b, "; %s", op.partial)
	default:
		fmt.Fprintf(&b, "; %s %s", op.what, op.undone)
	}
	switch {
	case !ok || st.State == conn.Established:
		b.WriteString("; try again")
	case st.State.Lost() && st.State != conn.LostReconnecting, st.State.Failed() && st.State != conn.FailedRetrying,
		st.State == conn.Exhausted, st.State == conn.Halted:
		b.WriteString("; mcpfsm will not reconnect: fix the server, then restart mcpfsm")
	case st.State == conn.NeedsAuthorization:
		b.WriteString("; sign in, then try again")
		var ae *conn.AuthError
		if h := f.signInHint(be); h != "" {
			// The hint holds the authorization URL, whose query is no
			// secret of the server's: the person signing in needs it whole.
			return f.opts.Redact(b.String()) + ": " + h
		} else if errors.As(st.LastErr, &ae) && ae.SignIn != "" {
			b.WriteString(": " + ae.SignIn)
		}
	case st.State == conn.Disposing, st.State == conn.Disposed:
		b.WriteString("; mcpfsm is shutting down")
	case sharedRan != nil:
		fmt.Fprintf(&b, "; this instance of the server has never started, though the server has run (its shared instance is %s): try again after the next attempt",
			sharedRan.State.Phrase())
	case neverStarted:
		b.WriteString("; it has never started")
		if left := st.MaxAttempts - st.Attempt; st.MaxAttempts > 0 {
			fmt.Fprintf(&b, " (%d more attempt(s) before it gives up)", left)
		}
		b.WriteString(": do not retry until it is up; it likely needs fixing (its command, env or credentials; mcpfsm status shows its cause)")
	default:
		b.WriteString("; try again after the next attempt")
	}
	return f.opts.Redact(b.String())
}

// refusal says why op was not done when no instance could serve it: the
// server's instance bound is reached, or its instance did not start.
func (f *Front) refusal(server string, op operation, err error) string {
	var bound *slots.Bound
	if errors.As(err, &bound) {
		return fmt.Sprintf("server %q: %v; %s %s; try again later", server, err, op.what, op.undone)
	}
	if errors.Is(err, instance.ErrEnded) {
		return fmt.Sprintf("server %q: %s %s: %v", server, op.what, op.undone, err)
	}
	return f.opts.Redact(fmt.Sprintf("%v; %s %s; try again", err, op.what, op.undone))
}

// roundWait keeps a delay readable: whole seconds from 10s, tenths below.
func roundWait(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
