package conn

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Outcome classifies how a tool call ended, for [CallRecord].
type Outcome string

// The outcomes of a tool call.
const (
	// OutcomeOK: the server answered with a result that is not an error.
	OutcomeOK Outcome = "ok"
	// OutcomeToolError: the server answered with a result whose IsError is
	// set: the tool ran and reported a failure to the model.
	OutcomeToolError Outcome = "tool-error"
	// OutcomeUnavailable: the server was not connected, or its connection
	// ended during the call (the error matches [ErrUnavailable]).
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeTimeout: CallTimeout or the caller's deadline expired first.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCanceled: the caller's context was cancelled.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeError: any other error, such as a JSON-RPC error answer
	// (unknown tool, invalid arguments) or a transport failure.
	OutcomeError Outcome = "error"
)

// CallRecord describes one finished tool call, as delivered to
// Config.OnCall.
type CallRecord struct {
	Server     string // the supervisor's Name
	Tool       string // the public name, from [PublicToolName]
	RawTool    string // the tool's name on the wire, as the server listed it
	Generation uint64 // the generation the call went to
	// Start is when the call began and Duration how long it took, both on
	// the supervisor's clock (the clock that enforces CallTimeout): on the
	// real clock Duration is monotonic wall time, on a mock clock it is
	// exactly as far as the test advanced it.
	Start    time.Time
	Duration time.Duration
	Outcome  Outcome
	// Err is the error the call returned; nil for OutcomeOK and
	// OutcomeToolError.
	Err error
}

// ClassifyCall returns the [Outcome] of a call that returned res and err.
func ClassifyCall(res *mcp.CallToolResult, err error) Outcome {
	switch {
	case err == nil && res != nil && res.IsError:
		return OutcomeToolError
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrUnavailable):
		return OutcomeUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	default:
		return OutcomeError
	}
}
