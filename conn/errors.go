package conn

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; the errors returned wrap them
// with the server name and state.
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

// unavailableError is a fast-failed call.
type unavailableError struct {
	server string
	tool   string
	state  State
	cause  error
}

func (e *unavailableError) Error() string {
	switch {
	case e.cause != nil && e.tool == "":
		return fmt.Sprintf("mcp server %q is unavailable (state %s): the connection ended during the request: %v",
			e.server, e.state, e.cause)
	case e.cause != nil:
		return fmt.Sprintf("mcp server %q is unavailable (state %s): the connection ended during the call of tool %q: %v",
			e.server, e.state, e.tool, e.cause)
	case e.tool == "":
		return fmt.Sprintf("mcp server %q is unavailable (state %s): nothing was sent", e.server, e.state)
	}
	return fmt.Sprintf("mcp server %q is unavailable (state %s): tool %q was not called", e.server, e.state, e.tool)
}

func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *unavailableError) Unwrap() error        { return e.cause }
