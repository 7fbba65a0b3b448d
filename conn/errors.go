package conn

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The errors a supervisor returns and records, and what the server did
// inside them: its exit and last words (ServerExit) or its HTTP error
// answer (HTTPError), as the transports recorded them, and a failure no
// wait can fix (PermanentError).

// Sentinel errors. Match them with errors.Is; the errors returned wrap them
// with the server name and state.
//
// The module's error strings start with their subject, as the standard
// library's do: an error about one server with `mcp server "<name>": `, an
// invalid setting with its field or path (conn.Config.Name, Stdio.Path,
// servers.fs.reconnect.maxAttempts), and an error of a package with no
// other subject with the package's name ("fsm: ", "sandbox: "). A
// sentinel carries no prefix, since it is read inside such a chain.
var (
	// ErrUnavailable: a tool call was made while the server is not
	// connected (during an outage, after exhaustion, or after Close). The
	// call failed fast; nothing was sent.
	ErrUnavailable = errors.New("mcp server unavailable")
	// ErrIncompleteShutdown: Close could not confirm that a server process
	// exited within the close timeout.
	ErrIncompleteShutdown = errors.New("shutdown may be incomplete")
	// ErrDuplicateServer: a live supervisor with the same Name already uses
	// the registry.
	ErrDuplicateServer = errors.New("duplicate mcp server name")
	// ErrClosed: the supervisor was closed.
	ErrClosed = errors.New("supervisor closed")
	// ErrInvalidConfig: Start was given an invalid Config.
	ErrInvalidConfig = errors.New("invalid supervisor config")
	// ErrToolConflict: a registry refused a tool because another server
	// already registered the same public name.
	ErrToolConflict = errors.New("tool name already registered")
	// ErrInvalidToolList: the server's tools/list answer was unusable (for
	// example two tools with one name); the previous tools stay registered.
	ErrInvalidToolList = errors.New("invalid tool list")
)

// ErrStillRunning: [Supervisor.Reconnect] was called in halted while the
// server process that halted reconnecting has still not exited. Starting
// another would run two processes of one server; stop the old one first.
var ErrStillRunning = errors.New("the old server process is still running")

// ErrPermanent is matched by the error of an attempt that failed in a way
// no wait can fix: the server's command is missing or not executable, its
// working directory is missing, or its URL's host does not resolve. The
// cause is a [*PermanentError], which names the fix. A [Launcher]'s error
// that matches it (a sandbox this system cannot give) is one too. The supervisor
// retries such a failure once, to confirm it, and then stops in
// [FailedPermanent] instead of spending its backoff.
var ErrPermanent = errors.New("no retry can fix it")

// ConfigError reports an invalid [Config] field. It matches
// errors.Is(err, ErrInvalidConfig).
type ConfigError struct {
	Field string // the Config field, such as "Name" or "Reconnect" (whose Err then names the policy field)
	Rule  string // what the field must be, phrased as advice
	Err   error  // an underlying cause, if any
}

// Error reads "conn.Config.<Field> <Rule>[: <cause>]".
func (e *ConfigError) Error() string {
	msg := "conn.Config." + e.Field + " " + e.Rule
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Unwrap returns the underlying cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// FailedError is the error of an attempt that did not bring the connection
// up: "connection failed". Only an attempt's failure creates it (whatever
// the state it leads to: failed-*, exhausted, halted, or disposal under
// FailOnStartupError), so it cannot be confused with [LostError].
type FailedError struct {
	Server     string
	Attempt    int    // 0 for the initial attempt, n for the n-th reconnect attempt
	Generation uint64 // the generation the attempt created
	Err        error
}

// Error reads `mcp server "<name>": connection failed: <cause>`.
func (e *FailedError) Error() string {
	return fmt.Sprintf("mcp server %q: connection failed: %v", e.Server, e.Err)
}

// Unwrap returns the attempt's cause.
func (e *FailedError) Unwrap() error { return e.Err }

// LostError is the error of an established connection that dropped:
// "connection lost".
type LostError struct {
	Server     string
	Generation uint64 // the generation that was established
	Err        error  // what the session's Wait returned, if anything
}

// Error reads `mcp server "<name>": connection lost[: <cause>]`.
func (e *LostError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("mcp server %q: connection lost", e.Server)
	}
	return fmt.Sprintf("mcp server %q: connection lost: %v", e.Server, e.Err)
}

// Unwrap returns the session's error.
func (e *LostError) Unwrap() error { return e.Err }

// ErrNeedsAuthorization is matched by the error an [HTTP.OAuthHandler]'s
// Authorize returns when it holds no usable credential (none was ever
// stored, or the last one was refused and could not be refreshed), so
// that a person must sign in: the supervisor then waits in
// [NeedsAuthorization] instead of [AuthRefused]. Return a
// [*SignInError], which says how to sign in.
var ErrNeedsAuthorization = transport.ErrNeedsAuthorization

// SignInError is what an [HTTP.OAuthHandler]'s Authorize returns when a
// person must sign in. It matches errors.Is(err, ErrNeedsAuthorization).
type SignInError struct {
	// How tells a person how to sign in, such as "run: mcpfsm auth login
	// notion -config mcp.json". It must hold no secret: it reaches logs,
	// Status and callers' tool errors.
	How string
	// Err is why no credential was usable, if there is more to say (a
	// refresh the authorization server refused).
	Err error
}

// Error reads "sign-in required: <How>[ (<cause>)]".
func (e *SignInError) Error() string {
	msg := "sign-in required: " + e.How
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

// Is reports ErrNeedsAuthorization.
func (e *SignInError) Is(target error) bool { return target == ErrNeedsAuthorization }

// Unwrap returns the cause.
func (e *SignInError) Unwrap() error { return e.Err }

// AuthError is the error of an attempt or connection whose server refused
// authorization: its last HTTP answer was 401 Unauthorized or 403
// Forbidden. With SignIn set, the HTTP.OAuthHandler held no usable
// credential and said how a person signs in (see [ErrNeedsAuthorization]):
// the supervisor waits in [NeedsAuthorization]. Otherwise the handler gave
// up, or none was set: retrying with the same credentials cannot succeed,
// so the supervisor stops in [AuthRefused]. Neither spends the outage
// budget.
type AuthError struct {
	Server     string
	Status     int    // the HTTP status: 401 or 403
	Generation uint64 // the generation the attempt created
	// SignIn is how a person signs in (the handler's [SignInError.How]);
	// empty when the server refused a credential.
	SignIn string
	Err    error // the attempt's error
}

// Error reads `mcp server "<name>": sign-in required (HTTP 401): <how>`
// or `mcp server "<name>": authorization refused (HTTP 403 Forbidden):
// <cause>; ...`.
func (e *AuthError) Error() string {
	if e.SignIn != "" {
		return fmt.Sprintf("mcp server %q: sign-in required (HTTP %d %s): %s",
			e.Server, e.Status, http.StatusText(e.Status), e.SignIn)
	}
	return fmt.Sprintf("mcp server %q: authorization refused (HTTP %d %s): %v; fix the credentials it is given (its headers, or sign in again), then reconnect",
		e.Server, e.Status, http.StatusText(e.Status), e.Err)
}

// Is reports ErrNeedsAuthorization for a sign-in the server needs.
func (e *AuthError) Is(target error) bool {
	return target == ErrNeedsAuthorization && e.SignIn != ""
}

// Unwrap returns the attempt's error.
func (e *AuthError) Unwrap() error { return e.Err }

// Fixes named by a [*PermanentError].
const (
	FixCommand    = "install the command or fix its path"
	FixExecutable = "make the command an executable program or fix its path"
	FixWorkDir    = "create the working directory or fix its path"
	FixHost       = "check the URL's host"
)

// PermanentError is the cause of an attempt that failed in a way no wait
// can fix. It matches errors.Is(err, ErrPermanent) and unwraps to the
// error the system reported (an *exec.Error, *fs.PathError or
// *net.DNSError), or to a [Launcher]'s error (such as a sandbox's).
type PermanentError struct {
	Fix string // what the operator must do: one of the Fix constants, or a Launcher's fix
	Err error  // the system's error
}

// Error reads "<cause> (<fix>)".
func (e *PermanentError) Error() string { return fmt.Sprintf("%v (%s)", e.Err, e.Fix) }

// Is reports ErrPermanent.
func (e *PermanentError) Is(target error) bool { return target == ErrPermanent }

// Unwrap returns the system's error.
func (e *PermanentError) Unwrap() error { return e.Err }

// permanentByFix wraps err in a [*PermanentError] when an error in its
// chain names the fix of a failure no retry can fix by a method
// PermanentFix() string (a [Launcher]'s, such as a sandbox this system
// cannot give), unless it matches [ErrPermanent] already.
func permanentByFix(err error) error {
	var p interface{ PermanentFix() string }
	if err == nil || errors.Is(err, ErrPermanent) || !errors.As(err, &p) {
		return err
	}
	return &PermanentError{Fix: p.PermanentFix(), Err: err}
}

// fixFor names the fix for a failure no wait can fix, or returns "". The
// system's errors are matched where they arise, so an unrelated "no such
// file" deeper in a transport's error is not mistaken for a missing
// command.
func fixFor(err error) string {
	var pe *fs.PathError
	var ee *exec.Error
	var dns *net.DNSError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return FixCommand
	case errors.As(err, &dns) && dns.IsNotFound:
		return FixHost
	case errors.As(err, &pe) && pe.Op == "chdir":
		return FixWorkDir
	case errors.As(err, &pe) && pe.Op == "fork/exec", errors.As(err, &ee):
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The program, or the interpreter its #! line names, is missing.
			return FixCommand
		case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
			return FixExecutable
		}
	}
	return ""
}

// markPermanent wraps an attempt's failure no wait can fix in a
// *PermanentError naming the fix.
func markPermanent(err error) error {
	if err == nil || errors.Is(err, ErrPermanent) {
		return err
	}
	if fix := fixFor(err); fix != "" {
		return &PermanentError{Fix: fix, Err: err}
	}
	return err
}

// unavailableError is a fast-failed call.
type unavailableError struct {
	server   string
	tool     string
	state    State
	endedNow bool // the connection ended at this instant: the state is chance
	cause    error
}

func (e *unavailableError) Error() string {
	switch {
	// A connection that ended under the request names no state: the
	// supervisor's loop moves on from it at the same moment.
	case e.cause != nil && e.tool == "":
		return fmt.Sprintf("mcp server %q is unavailable: the connection ended during the request: %v",
			e.server, e.cause)
	case e.cause != nil:
		return fmt.Sprintf("mcp server %q is unavailable: the connection ended during the call of tool %q: %v",
			e.server, e.tool, e.cause)
	// Nor does one that ended as the request came.
	case e.endedNow && e.tool == "":
		return fmt.Sprintf("mcp server %q is unavailable: the connection ended as the request came: nothing was sent", e.server)
	case e.endedNow:
		return fmt.Sprintf("mcp server %q is unavailable: the connection ended as tool %q was called: it was not called", e.server, e.tool)
	case e.tool == "":
		return fmt.Sprintf("mcp server %q is unavailable (state %s): nothing was sent", e.server, e.state)
	}
	return fmt.Sprintf("mcp server %q is unavailable (state %s): tool %q was not called", e.server, e.state, e.tool)
}

func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *unavailableError) Unwrap() error        { return e.cause }

// StderrTailLines bounds how many of a stdio server's last standard error
// lines a [ServerExit] quotes; [MaxCauseBytes] bounds their size.
const StderrTailLines = 5

// ServerExit is how a stdio server's process ended, with its last words:
// the cause inside the [*FailedError] or [*LostError] of a generation
// whose server exited. Reach it with errors.As.
type ServerExit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int
	// Signal names the signal that ended the process, such as "SIGKILL";
	// empty when it exited by itself.
	Signal string
	// BySupervisor reports that the supervisor sent that signal, after
	// the grace periods of a shutdown it started.
	BySupervisor bool
	// Limit names the sandbox limit the server ran into, such as "out of
	// memory under the sandbox's memoryMB 256" (see [Stdio.Launcher]);
	// empty when none is known.
	Limit string
	// Stderr holds the last lines the server wrote to standard error (at
	// most StderrTailLines lines and MaxCauseBytes bytes, as written, with
	// control characters replaced by spaces and what looks like a secret,
	// such as a URL's password or a TOKEN=value, by REDACTED), oldest
	// first. The Stdio.Stderr writer gets the lines as written.
	Stderr []string
	// BeforeAnswering reports that the process exited during a connection
	// attempt, before the handshake completed: it stopped at start (a
	// missing variable, a bad argument) rather than on anything asked.
	BeforeAnswering bool
}

// Error reads "the server exited: exit status 3; stderr: <lines>", "the
// server was killed by SIGKILL[ (sent by the supervisor)]; ..." or, under
// a sandbox's limit, "the server exited: out of memory under the
// sandbox's memoryMB 256 (exit status 2); ...", the lines separated by
// " | ".
func (e *ServerExit) Error() string {
	var b strings.Builder
	if e.Limit != "" {
		// The limit is the news; the status or signal says how it showed.
		how := fmt.Sprintf("exit status %d", e.Code)
		if e.Signal != "" {
			how = "killed by " + e.Signal
		}
		fmt.Fprintf(&b, "the server exited: %s (%s)", e.Limit, how)
	} else if e.Signal != "" {
		b.WriteString("the server was killed by " + e.Signal)
		if e.BySupervisor {
			b.WriteString(" (sent by the supervisor after the grace period)")
		}
	} else if e.BeforeAnswering {
		fmt.Fprintf(&b, "the server exited before answering: exit status %d", e.Code)
	} else {
		fmt.Fprintf(&b, "the server exited: exit status %d", e.Code)
	}
	if len(e.Stderr) > 0 {
		b.WriteString("; stderr: " + strings.Join(e.Stderr, " | "))
	}
	return b.String()
}

// The bound is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one the transport applies.
const _ = uint(StderrTailLines-transport.TailLines) + uint(transport.TailLines-StderrTailLines)

// MaxCauseBytes bounds the server's own words an error quotes: the start
// of an HTTP error body, the end of a stdio server's standard error.
const MaxCauseBytes = 2048

// The bound is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one the transport applies.
const _ = uint(MaxCauseBytes-transport.MaxCauseBytes) + uint(transport.MaxCauseBytes-MaxCauseBytes)

// HTTPError is an HTTP server's error answer (status 400 or above) to a
// request of the generation whose attempt failed or whose connection was
// lost. It travels inside the [*FailedError] or [*LostError]; reach it with
// errors.As.
type HTTPError struct {
	StatusCode int    // such as 503
	Status     string // such as "503 Service Unavailable"
	// Body is the start of the body as the server sent it, at most
	// MaxCauseBytes, with control characters replaced by spaces and what
	// looks like a secret (a URL's query values, an api_key=value) by
	// REDACTED.
	Body string
	// RetryAfter is the wait the server asked for with a Retry-After
	// header (delay-seconds or an HTTP date) on a 429 or 503; zero when
	// it asked for none. The supervisor waits at least this long before
	// its next attempt, backoff or probe, at most MaxRetryAfter.
	RetryAfter time.Duration
}

// Error reads "the server answered HTTP <status>[ (retry after <d>)][: <body>]".
func (e *HTTPError) Error() string {
	msg := "the server answered HTTP " + e.Status
	if e.RetryAfter > 0 {
		msg += " (retry after " + e.RetryAfter.String() + ")"
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// MaxRetryAfter caps the Retry-After an HTTP server may ask for: a longer
// one is honoured as this long, so a hostile or broken server cannot park
// a supervisor for days.
const MaxRetryAfter = time.Hour

// The cap is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one the transport applies.
const _ = uint(MaxRetryAfter-transport.MaxRetryAfter) + uint(transport.MaxRetryAfter-MaxRetryAfter)

// causedError is a generation's error with what the server did.
type causedError struct {
	err   error // what the SDK saw
	cause error // what the server did
}

// Error puts what the server did first: it is what an operator acts on.
// A server that exited before answering is all there is to say: the
// client's view (EOF on initialize) adds nothing.
func (e *causedError) Error() string {
	if x, ok := e.cause.(*ServerExit); ok && x.BeforeAnswering {
		return x.Error()
	}
	return fmt.Sprintf("%v (%v)", e.cause, e.err)
}

func (e *causedError) Unwrap() []error { return []error{e.err, e.cause} }

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

// causeOf reports an expired clock deadline as context.DeadlineExceeded
// rather than the cancellation the SDK saw.
func causeOf(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, context.DeadlineExceeded) && errors.Is(err, context.Canceled) {
		return cause
	}
	return err
}
