//lint:file-ignore SA1019 sampling and roots are deprecated upstream (SEP-2577) but still served; checkClient and cloneRoots validate them.

package conn

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/internal/servername"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for the zero values of [Config]'s durations.
const (
	// DefaultConnectTimeout bounds one attempt: opening the transport,
	// initializing the session and listing the tools.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultCallTimeout is the longest a tool call may take; a caller's
	// earlier deadline wins.
	DefaultCallTimeout = 5 * time.Minute
	// DefaultCloseTimeout bounds the close barrier: how long a retired
	// generation gets to confirm its server process exited.
	DefaultCloseTimeout = 5 * time.Second
	// DefaultProtocolVersion is the MCP protocol version a Supervisor asks
	// for unless Config.ProtocolVersion pins one: the newest, stateless
	// protocol, probed with server/discover. A server that answers the
	// probe with an error is initialized the classic way at
	// ClassicProtocolVersion (or the older version it answers with); one
	// that dies on the probe (some older stdio servers exit on unknown
	// methods) teaches the Supervisor to use ClassicProtocolVersion for the
	// rest of its life, within the same attempt.
	DefaultProtocolVersion = StatelessProtocolVersion
)

// Config configures a [Supervisor]. Only Name, Transport and Registry are
// required; every zero value has a documented default.
type Config struct {
	// Name identifies the server: in public tool names, logs and errors.
	// It must be 1 to 64 characters of [A-Za-z0-9_-], without "__" and
	// not ending in '_', so that public tool names split unambiguously.
	Name string
	// Transport opens a fresh transport for every generation.
	Transport Transport
	// Registry receives the server's tools.
	Registry Registry
	// Reconnect is the reconnect policy. Nil means policy.Default():
	// forgetting it never disables reconnecting. To disable, pass a policy
	// with Enabled false.
	Reconnect *policy.Policy
	// FailOnStartupError makes Start wait for the first attempt and return
	// its error, leaving nothing running, instead of retrying in the
	// background. If the attempt's server process could not be confirmed
	// gone within CloseTimeout, the error also wraps ErrIncompleteShutdown.
	FailOnStartupError bool
	// ConnectTimeout bounds one attempt. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds every tool call. Zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// Filter, if set, reports whether a tool or prompt the server lists,
	// by its own name, is published: one it refuses is never registered,
	// listed or called (a host's includeTools/excludeTools). Status
	// counts the tools it hid. Nil publishes everything.
	Filter func(name string) bool
	// MaxConcurrentCalls bounds the tool calls in flight to the server at
	// once. A call beyond it waits for a slot until its context ends or
	// CallTimeout passes, then is answered with a tool error (isError)
	// naming the limit, never sent. The wait counts against the call's
	// CallTimeout. Zero means no limit.
	MaxConcurrentCalls int
	// CloseTimeout bounds the close barrier. Zero means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// ProtocolVersion pins the MCP protocol version to request on every
	// attempt. Empty means DefaultProtocolVersion, with the fallback to
	// ClassicProtocolVersion learned from a server that dies on the
	// server/discover probe. Roots and Client's elicitation and sampling
	// handlers answer a 2026-07-28 server's input requests (the
	// input_required results of a call, SEP-2322) as they answer a classic
	// server's requests during a call. Pin ClassicProtocolVersion for a
	// server that answers server/discover yet still sends its requests
	// during a call, which a 2026-07-28 session refuses. A pinned version
	// is never changed by the supervisor. Servers that speak an older
	// version answer with it and the session uses theirs; Status.Protocol
	// says which was negotiated.
	ProtocolVersion string
	// PreferClassic, with ProtocolVersion empty, asks for
	// ClassicProtocolVersion on every attempt, as pinning it would,
	// until a server refuses the classic initialize handshake: one that
	// answers initialize with a JSON-RPC error (a server of
	// StatelessProtocolVersion only) is probed with server/discover at
	// DefaultProtocolVersion within the same attempt and its
	// ConnectTimeout, after its first transport's process (if any) is
	// gone, and the supervisor asks for DefaultProtocolVersion from then
	// on. The fallback is not a failed attempt: it spends no outage
	// budget, and no two processes of the server are ever alive. A
	// gateway whose clients speak the classic era sets it, so that a
	// server written for that era sends its requests during a call as it
	// would to them, while a server that speaks only the stateless
	// protocol still comes up. Ignored when ProtocolVersion is set.
	PreferClassic bool
	// KeepAlive, if positive, pings the server at this interval on Clock,
	// each ping bounded by the same interval; a server that does not
	// answer (hung, or its connection silently gone) has its session
	// ended, in-flight calls included, which counts as a lost connection,
	// with uptime counted to the unanswered ping. Zero means the
	// transport's default: [DefaultHTTPKeepAlive] for an [HTTP] transport,
	// no pings otherwise (then only call deadlines notice a hung server).
	KeepAlive time.Duration
	// HoldCalls, if positive, lets a tool call that finds the connection
	// gone wait for the next one instead of failing fast: up to HoldCalls
	// from the call's start, for a new generation to be established, and
	// then the call is sent there, once. Only a call that is safe to send
	// again is held: one whose request was never written to the server
	// (the connection was already gone, or refused it), or, with
	// RetryIdempotent, one of a tool the server annotates readOnlyHint or
	// idempotentHint. A call that may have reached the server is never
	// sent twice otherwise, so a non-idempotent tool never runs twice for
	// one call. A held call still ends at its context's deadline, and at
	// once when the supervisor stops reconnecting (exhausted, disabled,
	// failed-permanent, halted, refused, Close). Zero means fail fast with
	// ErrUnavailable. Each attempt of a held call is reported to OnCall.
	HoldCalls time.Duration
	// RetryIdempotent, with HoldCalls, also sends again a call that may
	// have reached the server when the connection ended before its answer,
	// if the tool is annotated readOnlyHint or idempotentHint: the server
	// may then execute it twice, which those hints declare harmless.
	RetryIdempotent bool
	// Clock is the time source for timeouts and backoff. Nil means the
	// real clock.
	Clock clock.Clock
	// Logger receives the supervisor's logs. Nil means slog.Default().
	Logger *slog.Logger
	// Client holds the SDK's client options, installed on the client of
	// every generation: capabilities and the handlers a server's requests
	// and notifications reach (elicitation, sampling, logging, progress,
	// resource updates, list changes). The supervisor composes its own
	// handling with them, never replacing them, but runs them off the
	// SDK's goroutines so that a slow handler cannot keep the supervisor
	// from noticing a dead server: notification handlers run one at a
	// time, in arrival order, on one goroutine of the supervisor (at most
	// 1024 wait; more are dropped and logged), and each request handler
	// on its own goroutine; a request whose server cancels it or whose
	// connection ends gets an error at once even if its handler has not
	// returned. Every handler's context is cancelled by Close, which waits
	// for running handlers at most CloseTimeout. Client.KeepAlive is
	// rejected: use Config.KeepAlive. Client.Logger, if set, replaces
	// Config.Logger for the SDK's own logs. Nil means no handlers.
	Client *mcp.ClientOptions
	// ClientMiddleware is added to every generation's client as receiving
	// middleware ([mcp.Client.AddReceivingMiddleware]): it sees the
	// server's requests and notifications before the client's handlers,
	// and may answer them itself (a proxy answers roots/list for the
	// client the request belongs to, for example).
	ClientMiddleware []mcp.Middleware
	// Propagate, if set, carries the host's own context into every
	// request the supervisor sends to the server, such as W3C trace
	// context (SEP-414) without conn depending on a tracing library. It
	// is called with the request's context (for a tool call, prompt or
	// resource read, the caller's ctx; for the supervisor's own requests,
	// such as pings and listings, one without the caller's values) and a
	// set function; each key and value set is added to the request's
	// params._meta (a copy: the caller's WithCallMeta map is not
	// changed, and a key set here wins over the same key there), and on
	// an [HTTP] transport also sent as an HTTP header of the request
	// unless the request already has that header. Notifications get
	// nothing. It runs on the caller's goroutine, concurrently with other
	// calls: it must be safe for concurrent use, and cheap. Package
	// tracing provides one.
	Propagate func(ctx context.Context, set func(key, value string))
	// Implementation is the client identity sent in initialize. Nil means
	// "mcpfsm" at this module's version from the build information
	// ("(devel)" when there is none).
	Implementation *mcp.Implementation
	// Roots are the roots offered to the server from the first generation
	// on; change them with [Supervisor.SetRoots].
	Roots []*mcp.Root //lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still served.
	// Catalog, if set, receives the server's resources, resource templates
	// and prompts; see [Catalog]. Nil means they are not listed.
	Catalog *Catalog
	// OnTransition, if set, is called for every transition of the
	// connection machine, in order, exactly once each, never concurrently.
	// It runs on the supervisor's event loop: it must not block or call
	// Close.
	OnTransition func(Transition)
	// OnCall, if set, is called once for every call of one of the
	// supervisor's tools, fast-failed calls included, after the call
	// ends, on the caller's goroutine. Calls run concurrently, so it must
	// be safe for concurrent use, and it should be cheap: it delays the
	// call's return. Package metrics provides one.
	OnCall func(CallRecord)

	// onStep, set only by tests (export_test.go), sees every step of the
	// supervisor's inner machines (tool-sync, generation) as they are
	// taken: the coverage tests drive the real supervisor along every
	// edge of their tables.
	onStep func(machine, from, event, when, to string)
}

// resolved is a validated Config with every default applied.
type resolved struct {
	Config
	policy policy.Policy
}

func (c Config) resolve() (resolved, error) {
	r := resolved{Config: c}
	if err := checkName(c.Name); err != nil {
		return r, err
	}
	if c.Transport == nil {
		return r, &ConfigError{Field: "Transport", Rule: "is nil: use conn.Command for a stdio server, conn.Streamable for an HTTP one, or conn.TransportFunc for anything else"}
	}
	if v, ok := c.Transport.(validator); ok {
		if err := v.validate(); err != nil {
			return r, &ConfigError{Field: "Transport", Rule: "is invalid", Err: err}
		}
	}
	if c.Registry == nil {
		return r, &ConfigError{Field: "Registry", Rule: "is nil: pass conn.NewRegistry() or your own Registry"}
	}
	if err := checkClient(c.Client); err != nil {
		return r, err
	}
	if c.Implementation != nil && c.Implementation.Name == "" {
		return r, &ConfigError{Field: "Implementation.Name", Rule: "is empty: name the host, or leave Implementation nil for \"mcpfsm\""}
	}
	roots, err := cloneRoots(c.Roots)
	if err != nil {
		return r, &ConfigError{Field: "Roots", Rule: "is invalid", Err: err}
	}
	r.Roots = roots
	r.policy = policy.Default()
	if c.Reconnect != nil {
		r.policy = *c.Reconnect
	}
	if err := r.policy.Validate(); err != nil {
		return r, &ConfigError{Field: "Reconnect", Rule: "is invalid", Err: err}
	}
	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"ConnectTimeout", &r.ConnectTimeout, DefaultConnectTimeout},
		{"CallTimeout", &r.CallTimeout, DefaultCallTimeout},
		{"CloseTimeout", &r.CloseTimeout, DefaultCloseTimeout},
		{"KeepAlive", &r.KeepAlive, 0},
		{"HoldCalls", &r.HoldCalls, 0},
	} {
		if *d.v < 0 {
			return r, &ConfigError{Field: d.field, Rule: fmt.Sprintf("is %v: use a positive duration, or zero for the default %v", *d.v, d.def)}
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if r.RetryIdempotent && r.HoldCalls == 0 {
		return r, &ConfigError{Field: "RetryIdempotent", Rule: "is set but HoldCalls is zero: set HoldCalls to how long a call may wait for the next connection"}
	}
	if d, ok := c.Transport.(keepAliveDefaulter); ok && c.KeepAlive == 0 {
		r.KeepAlive = d.defaultKeepAlive()
	}
	if r.Clock == nil {
		r.Clock = clock.New()
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r, nil
}

// keepAliveDefaulter is a transport with a default keep-alive interval.
type keepAliveDefaulter interface{ defaultKeepAlive() time.Duration }

// NameRule states what a Config.Name must be: the name becomes part of
// every public tool name, mcp__<server>__<tool>, and must split from it
// unambiguously.
const NameRule = servername.Rule

// ValidName reports whether name is a valid Config.Name (see [NameRule]),
// for hosts that check their configuration before starting supervisors.
func ValidName(name string) bool { return servername.Valid(name) }

func checkName(name string) error {
	if !ValidName(name) {
		return &ConfigError{Field: "Name", Rule: fmt.Sprintf("is %q: it must be %s", name, NameRule)}
	}
	return nil
}

// checkClient rejects the client options the supervisor owns itself.
func checkClient(o *mcp.ClientOptions) error {
	if o == nil {
		return nil
	}
	if o.KeepAlive != 0 || o.KeepAliveFailureThreshold != 0 {
		return &ConfigError{Field: "Client.KeepAlive", Rule: "is set: the supervisor pings the server itself; use Config.KeepAlive instead, which ends a hung session without waiting for its calls"}
	}

	if o.CreateMessageHandler != nil && o.CreateMessageWithToolsHandler != nil {
		return &ConfigError{Field: "Client.CreateMessageHandler", Rule: "and Client.CreateMessageWithToolsHandler are both set: set only one (the SDK panics on both)"}
	}
	return nil
}

// cloneRoots checks roots and copies them, so the caller's later edits
// change nothing.
func cloneRoots(roots []*mcp.Root) ([]*mcp.Root, error) {
	seen := map[string]bool{}
	out := make([]*mcp.Root, 0, len(roots))
	for i, r := range roots {
		if r == nil || r.URI == "" {
			return nil, fmt.Errorf("root %d has no URI: give every root a URI such as file:///path/to/project", i)
		}
		if seen[r.URI] {
			return nil, fmt.Errorf("URI %q appears twice: give each root once", r.URI)
		}
		seen[r.URI] = true
		c := *r
		out = append(out, &c)
	}
	return out, nil
}
