// Package front serves the tools of many supervised MCP servers as one MCP
// server, so that any MCP host (Claude Desktop, Claude Code, Cursor, VS
// Code...) gets mcpfsm's reconnects by listing one server.
//
// A [Front] mirrors the servers' tools into an MCP server: every tool
// under its public name (mcp__<server>__<tool>), a
// notifications/tools/list_changed to the clients whenever the set really
// changes (a reconnect that lists the same tools changes nothing), and
// every call routed to the supervisor that published the tool. A call
// made during an outage is answered at once with a tool error result
// (isError) that names the server, its state and the next attempt, such
// as
//
//	server "fs": connection lost; reconnecting in 2s (attempt 3/10); tool "mcp__fs__read" was not called
//
// never with a protocol error and never by waiting for the server.
//
// Every client of the front is served apart: its own tool list, roots,
// logging level, subscriptions and bridged calls. Over Streamable HTTP
// ([Front.HTTPHandler]) a server isolated per client (Backends.Isolation) gets an
// instance of its own for each client: its own supervisor (a stdio
// server's own process, an HTTP server's own session), started on the
// client's first request to it and closed when the client's session ends
// or after Options.InstanceIdle without use, so that roots, server
// requests and notifications are the client's by construction. A server
// shared by every client gets the roots its configuration declares, and
// a request of it that no single call explains is refused. A client on
// protocol 2025-11-25 is its session; one on 2026-07-28, which has no
// session, is its subject (the OAuth subject or client, or the token).
//
// With Options.Names set to [NamesRaw] tools and prompts keep their
// servers' own names instead (a name two servers share stays prefixed
// for the later one).
//
// It speaks protocol 2026-07-28 and the classic versions over stdio and
// over Streamable HTTP ([Front.HTTPHandler] routes each request to the
// handler of its era), whatever era each backend speaks: a backend's
// elicitation, sampling and roots requests during a call reach a modern
// client as input requests of the call's result (a bridged call) and a
// classic one as requests, on the stream of the call they belong to;
// progress comes back under the client's own token.
//
// With Options.Catalog it serves the servers' resources, resource
// templates and prompts the same way: prompts as mcp__<server>__<prompt>,
// resources under their servers' own URIs. A URI (or template) that
// several servers list is served as is for the first of them in name
// order, and as mcpfsm:<server>/<uri> ([RoutedURI]) for the others; the
// routed form reaches any server's resource, listed or not. Reads,
// prompts/get and completion/complete go to the right supervisor, and
// during an outage fail at once with an error naming the server, its
// state and the next attempt. resources/subscribe becomes the
// supervisor's Subscribe (re-sent after reconnects) and updates come back
// to the clients that subscribed.
package front

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/slots"
	"github.com/mcpfsm/mcpfsm/front/internal/tasks"
	"github.com/mcpfsm/mcpfsm/internal/broadcast"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backends are the servers a [Front] serves; package host's Host is one.
// Each server has a shared instance, the supervisor the host started
// for it, which publishes to Options.Registry and Options.Catalog: its
// listing is what a client without an instance of its own sees.
type Backends interface {
	// StatusOf returns the status of server's shared instance, if it has
	// one.
	StatusOf(server string) (conn.Status, bool)
	// Supervisor returns server's shared instance, if it has one.
	Supervisor(server string) (*conn.Supervisor, bool)
	// Supervisors returns every shared instance.
	Supervisors() []*conn.Supervisor
	// Isolation says how the clients of the front's HTTP handler share
	// server: shared, every client is served by its shared instance (and
	// no client's roots reach it); otherwise (per-client) each client
	// gets an instance of its own, at most maxInstances at once (zero:
	// HTTPOptions.MaxSessions); a client's first request past that bound
	// is answered with an error naming it. The stdio front has one
	// client, which every shared instance serves as its own.
	Isolation(server string) (shared bool, maxInstances int)
	// StartInstance starts a new instance of server for one client, with
	// the server's configuration as the shared instance has it, changed
	// by configure (which sets what is the client's: its registry,
	// catalog, client options, roots and transitions). It returns an
	// error when the server is not configured (any more).
	StartInstance(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error)
	// Guard returns what decides server's requests, by caller: who may see and use
	// which of its tools, prompts and resources, and how often.
	Guard(server string) authz.Guard
}

// isolation is how the HTTP front's clients share a server (see
// Backends.Isolation).
type isolation struct {
	shared       bool
	maxInstances int
}

// Options configure a [Front]. Registry is required.
type Options struct {
	// Registry holds the shared instances' tools; they publish to it.
	Registry *conn.ToolRegistry
	// Catalog holds the shared instances' resources, resource templates
	// and prompts (conn.Config.Catalog). Nil serves tools only.
	Catalog *conn.Catalog
	// Backends are the servers behind the registry: their status for
	// the outage messages, their supervisors for subscriptions,
	// completions and logging, and their per-client instances. Nil
	// serves every server as shared, without status in its messages.
	Backends Backends
	// Clock is the supervisors' clock, to say when the next attempt is,
	// and the front's own, for idle instances and bridged calls. Nil
	// means the real clock.
	Clock clock.Clock
	// Logger receives the front's logs. Nil means slog.Default().
	Logger *slog.Logger
	// Implementation names the front server to its clients. Nil means
	// {Name: "mcpfsm", Version: ModuleVersion()}.
	Implementation *mcp.Implementation
	// Audit, if set, receives one record per tool call, resource read and
	// prompt get of the front's clients.
	Audit *audit.Log
	// Names says what tools and prompts are called: "" or NamesPrefixed
	// for mcp__<server>__<name>, NamesRaw for the servers' own names.
	Names Names
	// InstanceIdle closes a per-client instance that served no request
	// for that long; the client's next request starts it again. Zero
	// means DefaultInstanceIdle; negative, never.
	InstanceIdle time.Duration
	// Redact, if set, rewrites every text the front sends a client that
	// it did not get from a backend's answer (outage messages, errors):
	// it removes the secrets the host configured.
	Redact func(string) string
	// Tally, if set, counts every request the servers' per-caller
	// guards decide, by server and caller (for the console).
	Tally *authz.Tally
	// OnRefused, if set, is called for every request a server's
	// per-caller rules refuses (for metrics).
	OnRefused func(server string, v authz.Verdict)
	// Tracer, if set, traces every request and the backend calls it
	// makes. Nil traces nothing, and costs nothing.
	Tracer Tracer
	// Tools say how tools are listed: every tool (the default), or a
	// search tool and a call tool (see [ToolsOptions]).
	Tools ToolsOptions
	// Limits bound what one tool result puts into a client's context
	// (see [ResultLimits]).
	Limits ResultLimits
	// SignInHint, if set, says how the caller subject ("" for the
	// operator) signs in to server: the isError of a request to a server
	// that needs a sign-in ends with it, in place of the server's own
	// hint. Serve says the authorization URL of the sign-in under way and
	// the mcpfsm auth login command.
	SignInHint func(server, subject string) string
	// CallerSignIn, if set, returns the OAuth handler that carries the
	// credential of caller subject to server, or nil when the server's
	// credential is not the caller's own (serve's upstreamAuth
	// "per-caller"). A client with a subject gets it on its own instance
	// of server in place of the operator's (an own instance even when the
	// server is shared by every client), and that instance starts even
	// while the shared one waits for the operator's sign-in. Such
	// instances start without a request to the server: when a 2025-11-25
	// session has initialized, and at a 2026-07-28 client's tools/list,
	// so that the caller is asked to sign in and is listed the server's
	// tools.
	//
	// token returns the caller's own access token, the last it presented
	// to the HTTP front (held in memory only): serve exchanges it for the
	// server's (upstreamAuth "tokenExchange").
	CallerSignIn func(server, subject string, token func(context.Context) (string, error)) auth.OAuthHandler
}

// DefaultInstanceIdle is how long a per-client instance may go unused
// before it is closed.
const DefaultInstanceIdle = 10 * time.Minute

// Front is one MCP server that fronts the tools of a registry. Create it
// with [New]; serve it with [Front.Run] or [Front.HTTPHandler] while
// [Front.Sync] mirrors the registry.
type Front struct {
	opts Options

	tmu   sync.Mutex
	moved broadcast.Signal // notified at every transition of an instance (noteMove)

	mu       sync.Mutex
	clients  map[*client]struct{}
	subjects map[string]*client    // the modern clients, by subject
	slots    slots.Slots           // sessions, per subject and per server's instances
	shared   *client               // stdio: the one client, whose the shared instances are
	signIns  map[string]*signInAsk // the sign-ins under way, by ID (signin.go)
	tokens   map[string]string     // each OAuth caller's last access token, by subject (CallerSignIn)

	wmu    sync.Mutex
	warned map[string]bool // catalog entries already reported as not served

	audit    auditor        // writes Options.Audit
	logs     logRelay       // the shared instances' logging level
	progress progressTokens // the calls that asked for progress
	subs     sharedSubs     // the clients' subscriptions to shared resources

	wg sync.WaitGroup // goroutines of the front's own (instance closes, roots reads)

	results *results // the cut results kept for their callers (limits.go)
	tasks   taskRuns // the tool calls run as tasks (tasks.go)

	eras eraInstances // the shared servers' instances for 2026-07-28 clients (erainstance.go)
}

// Observe takes note of a transition of a shared instance. Pass it as
// (or call it from) conn.Config.OnTransition: a call whose connection
// ends under it then waits for the supervisor to register the loss, so
// that its error says when the next attempt is, and a server
// established again gets the clients' logging level. It never blocks.
func (f *Front) Observe(t conn.Transition) {
	f.levelAfter(t)
	f.noteMove()
}

// thenObserve returns an OnTransition that calls next, when it is set,
// and then each of also, in order.
func thenObserve(next func(conn.Transition), also ...func(conn.Transition)) func(conn.Transition) {
	return func(t conn.Transition) {
		if next != nil {
			next(t)
		}
		for _, o := range also {
			o(t)
		}
	}
}

// noteMove wakes the calls waiting for a transition (awaitLoss): every
// instance's, a client's own too, or a call that found its instance's
// connection ended would wait out lossWait for a loss already taken.
func (f *Front) noteMove() {
	f.tmu.Lock()
	f.moved.Notify()
	f.tmu.Unlock()
}

// transitioned returns a channel closed at the next transition of an
// instance.
func (f *Front) transitioned() <-chan struct{} {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	return f.moved.C()
}

// all returns the clients served now.
func (f *Front) all() []*client {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*client, 0, len(f.clients))
	for c := range f.clients {
		out = append(out, c)
	}
	return out
}

// wait waits for the front's own goroutines: instance closes and roots
// reads of clients that have ended.
func (f *Front) wait() { f.wg.Wait() }

// isolation is how server is shared over HTTP; every server is shared
// without Backends.
func (f *Front) isolation(server string) isolation {
	if f.opts.Backends == nil {
		return isolation{shared: true}
	}
	shared, n := f.opts.Backends.Isolation(server)
	return isolation{shared, n}
}

// status is the status of server's shared instance.
func (f *Front) status(server string) (conn.Status, bool) {
	if f.opts.Backends == nil {
		return conn.Status{}, false
	}
	return f.opts.Backends.StatusOf(server)
}

// supervisors are the shared instances.
func (f *Front) supervisors() []*conn.Supervisor {
	if f.opts.Backends == nil {
		return nil
	}
	return f.opts.Backends.Supervisors()
}

// ToolsOptions say how a client's tools/list is made.
//
// In search mode (Search set) a client is listed two tools of the
// front's own instead of every tool it may see: SearchToolName, which
// answers the tools that best match a query in words (their names,
// descriptions and input schemas, ranked by package toolsearch), and
// CallToolName, which calls one of them by name. Pin lists tools that
// are listed as they are besides. A search answers only among the tools
// the client's caller may see and use, as its tools/list would have
// listed them (its servers' per-caller rules, its own instances'
// listings), and a hit of a server in an outage says so. A call through
// CallToolName takes the path a direct tools/call of the tool takes: the
// same policy check and rate limit, audit record, trace span and outage
// answer. The index follows every change of the client's tools.
type ToolsOptions struct {
	// Search lists the search and call tools instead of every tool.
	Search bool
	// Pin are tools listed as they are in search mode, by the name the
	// client knows them by (mcp__<server>__<tool>, or the raw name with
	// NamesRaw).
	Pin []string
}

// signInAsk is one sign-in the front asks its clients to open.
type signInAsk struct {
	subject, server, url, id string
	asked                    map[*client]bool
}

// taskRuns are the front's tasks.
type taskRuns struct {
	once  sync.Once
	store *tasks.Store
	idle  atomic.Int64 // a modern client's idle end, held off while its task runs (HTTPOptions.SessionTimeout)
	armed func()       // tests: called once a call's head start is timed
}
