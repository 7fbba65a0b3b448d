package metrics

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys and values of the MCP semantic conventions.
const (
	keyMethod        = "mcp.method.name"
	keyOperation     = "gen_ai.operation.name"
	keyToolName      = "gen_ai.tool.name"
	keyErrorType     = "error.type"
	keyRPCStatusCode = "rpc.response.status_code"
	methodToolsCall  = "tools/call"
	opExecuteTool    = "execute_tool"
)

// maxCachedSets bounds the attribute sets kept for reuse. Past it (a
// server whose tools keep changing names), sets are built per call.
const maxCachedSets = 10_000

// OnCall records one tool call. Use it as conn.Config.OnCall (or let
// [Metrics.Instrument] do it); it is safe for concurrent use.
func (m *Metrics) OnCall(r conn.CallRecord) {
	code := ""
	if r.Outcome == conn.OutcomeError {
		if rpc := (*jsonrpc.Error)(nil); errors.As(r.Err, &rpc) {
			code = strconv.FormatInt(rpc.Code, 10)
		}
	}
	m.calls.Record(context.Background(), r.Duration.Seconds(), m.attrs.get(callKey{r.Server, r.RawTool, r.Outcome, code})...)
}

// callKey is what a call's attributes depend on.
type callKey struct {
	server, tool string
	outcome      conn.Outcome
	code         string // JSON-RPC error code, if any
}

// callAttrs caches the record options (the attribute set) of each
// callKey: building a set sorts and copies its attributes, which would
// cost more than recording.
type callAttrs struct {
	mu   sync.RWMutex
	opts map[callKey][]metric.RecordOption
}

func (c *callAttrs) get(k callKey) []metric.RecordOption {
	c.mu.RLock()
	opts, ok := c.opts[k]
	c.mu.RUnlock()
	if ok {
		return opts
	}
	opts = []metric.RecordOption{metric.WithAttributeSet(k.attributes())}
	c.mu.Lock()
	if c.opts == nil {
		c.opts = map[callKey][]metric.RecordOption{}
	}
	if len(c.opts) < maxCachedSets {
		c.opts[k] = opts
	}
	c.mu.Unlock()
	return opts
}

func (k callKey) attributes() attribute.Set {
	kvs := []attribute.KeyValue{
		attribute.String(keyMethod, methodToolsCall),
		attribute.String(keyOperation, opExecuteTool),
		attribute.String(keyToolName, k.tool),
		attribute.String(KeyServer, k.server),
		attribute.String(KeyCallOutcome, string(k.outcome)),
	}
	if et := errorType(k.outcome, k.code); et != "" {
		kvs = append(kvs, attribute.String(keyErrorType, et))
	}
	if k.code != "" {
		kvs = append(kvs, attribute.String(keyRPCStatusCode, k.code))
	}
	return attribute.NewSet(kvs...)
}

// errorType is the error.type of a call: empty for a success, and
// otherwise as the MCP semantic conventions ask: "tool_error" for a result
// with isError, the JSON-RPC error code when there is one, else a short
// class of the failure.
func errorType(o conn.Outcome, code string) string {
	switch {
	case o == conn.OutcomeOK:
		return ""
	case o == conn.OutcomeToolError:
		return "tool_error"
	case code != "":
		return code
	case o == conn.OutcomeError:
		return "_OTHER"
	default:
		return string(o) // unavailable, timeout, canceled
	}
}

func serverAttr(server string) attribute.KeyValue { return attribute.String(KeyServer, server) }

func attrString(k, v string) attribute.KeyValue { return attribute.String(k, v) }
