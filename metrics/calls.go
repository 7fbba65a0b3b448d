package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"

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

// maxCachedSets bounds the attribute sets a Metrics keeps for reuse, over
// all its servers, tools, outcomes and error codes (a set takes about half
// a kilobyte). Past it (a server that keeps listing new tool names, or
// answers with ever new error codes) a call's set is built for that call:
// the record is correct, only slower and allocating.
const maxCachedSets = 4096

// maxCodesPerTool bounds the JSON-RPC error codes cached for one tool.
const maxCodesPerTool = 8

// OnCall records one tool call. Use it as conn.Config.OnCall (or let
// [Metrics.Instrument] do it); it is safe for concurrent use. The call is
// queued, and read by the next collection (see the package doc).
func (m *Metrics) OnCall(r conn.CallRecord) {
	m.queue(nil, r)
}

// callsOf returns the call recorder of server, creating it on first use.
func (m *Metrics) callsOf(server string) *serverCalls {
	m.callsMu.RLock()
	s := m.servers[server]
	m.callsMu.RUnlock()
	if s != nil {
		return s
	}
	m.callsMu.Lock()
	defer m.callsMu.Unlock()
	if s = m.servers[server]; s == nil {
		s = &serverCalls{m: m, server: server, tools: map[string]*toolSets{}}
		if m.servers == nil {
			m.servers = map[string]*serverCalls{}
		}
		m.servers[server] = s
	}
	return s
}

// serverCalls records the calls of one server: the record options of
// each of its tools, built on first use and kept while the Metrics' budget
// of cached sets lasts.
type serverCalls struct {
	m      *Metrics
	server string

	mu    sync.RWMutex
	tools map[string]*toolSets // by the tool's name on the wire
}

// toolSets holds the record options of one tool: one per outcome without
// a JSON-RPC code (by [outcomeIndex]) and a few per code.
type toolSets struct {
	byOutcome [numOutcomes]atomic.Pointer[[]metric.RecordOption]

	mu    sync.Mutex
	codes []codeSet
}

type codeSet struct {
	code int64
	opts []metric.RecordOption
}

// record queues r, a call of s's server (another server's call goes to
// that server's recorder).
func (s *serverCalls) record(r conn.CallRecord) {
	s.m.queue(s, r)
}

// queue queues r for recording; s is the recorder of r's server, or nil
// when the caller does not know it. Only the error's JSON-RPC code is read
// now (the error is not kept); the recorder and the attribute set are
// looked up when the queue is recorded.
func (m *Metrics) queue(s *serverCalls, r conn.CallRecord) {
	c := pendingCall{s: s, server: r.Server, tool: r.RawTool, outcome: r.Outcome, secs: r.Duration.Seconds()}
	if r.Outcome == conn.OutcomeError {
		c.code, c.hasCode = rpcCode(r.Err)
	}
	m.pending.add(&c)
}

// options returns the record options of c, from the cache when it can.
func (s *serverCalls) options(c *pendingCall) []metric.RecordOption {
	ts := s.toolSets(c.tool)
	if ts == nil {
		return s.build(c.tool, c.outcome, c.code, c.hasCode)
	}
	if c.hasCode {
		return ts.codeOptions(s, c.tool, c.code)
	}
	i := outcomeIndex(c.outcome)
	if i < 0 {
		return s.build(c.tool, c.outcome, 0, false)
	}
	slot := &ts.byOutcome[i]
	if p := slot.Load(); p != nil {
		return *p
	}
	opts := s.build(c.tool, c.outcome, 0, false)
	if s.m.reserve() && !slot.CompareAndSwap(nil, &opts) {
		s.m.cached.Add(-1) // another call stored the same set first
	}
	return opts
}

// toolSets returns the cache of tool, or nil when the budget is spent
// and tool has none.
func (s *serverCalls) toolSets(tool string) *toolSets {
	s.mu.RLock()
	ts := s.tools[tool]
	s.mu.RUnlock()
	if ts != nil || s.m.cached.Load() >= maxCachedSets {
		return ts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts = s.tools[tool]; ts == nil {
		ts = &toolSets{}
		s.tools[tool] = ts
	}
	return ts
}

func (ts *toolSets) codeOptions(s *serverCalls, tool string, code int64) []metric.RecordOption {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, c := range ts.codes {
		if c.code == code {
			return c.opts
		}
	}
	opts := s.build(tool, conn.OutcomeError, code, true)
	if len(ts.codes) < maxCodesPerTool && s.m.reserve() {
		ts.codes = append(ts.codes, codeSet{code, opts})
	}
	return opts
}

// reserve takes one set from the cache budget, reporting whether there
// was one.
func (m *Metrics) reserve() bool {
	if m.cached.Add(1) <= maxCachedSets {
		return true
	}
	m.cached.Add(-1)
	return false
}

func (s *serverCalls) build(tool string, o conn.Outcome, code int64, hasCode bool) []metric.RecordOption {
	kvs := make([]attribute.KeyValue, 0, 7)
	kvs = append(kvs,
		attribute.String(keyMethod, methodToolsCall),
		attribute.String(keyOperation, opExecuteTool),
		attribute.String(keyToolName, tool),
		attribute.String(KeyServer, s.server),
		attribute.String(KeyCallOutcome, string(o)),
	)
	codeText := ""
	if hasCode {
		codeText = strconv.FormatInt(code, 10)
	}
	if et := errorType(o, codeText); et != "" {
		kvs = append(kvs, attribute.String(keyErrorType, et))
	}
	if hasCode {
		kvs = append(kvs, attribute.String(keyRPCStatusCode, codeText))
	}
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// numOutcomes is the number of slots of toolSets.byOutcome.
const numOutcomes = 6

// outcomeIndex is the slot of o in toolSets.byOutcome, or -1 for an
// outcome this package does not know (its set is built per call).
func outcomeIndex(o conn.Outcome) int {
	switch o {
	case conn.OutcomeOK:
		return 0
	case conn.OutcomeToolError:
		return 1
	case conn.OutcomeUnavailable:
		return 2
	case conn.OutcomeTimeout:
		return 3
	case conn.OutcomeCanceled:
		return 4
	case conn.OutcomeError:
		return 5
	default:
		return -1
	}
}

// rpcCode is the code of the JSON-RPC error in err's chain, found without
// allocating (errors.As would put its target on the heap).
func rpcCode(err error) (int64, bool) {
	for err != nil {
		switch e := err.(type) {
		case *jsonrpc.Error:
			return e.Code, true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if code, ok := rpcCode(inner); ok {
					return code, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
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
