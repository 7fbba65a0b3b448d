// Package front serves the tools of many supervised MCP servers as one MCP
// server, so that any MCP host (Claude Desktop, Claude Code, Cursor, VS
// Code...) gets mcpfsm's reconnects by listing one server.
//
// A [Front] mirrors a conn.ToolRegistry into an mcp.Server: every tool
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
// With Options.Names set to [NamesRaw] tools and prompts keep their
// servers' own names instead (a name two servers share stays prefixed
// for the later one).
//
// It speaks protocol 2026-07-28 and the classic versions over stdio and
// over Streamable HTTP ([Front.HTTPHandler] routes each request to the
// handler of its era), whatever era each backend speaks: a backend's
// elicitation, sampling and roots requests during a call reach a modern
// client as input requests of the call's result (a bridged call,
// [BridgeSpec]) and a classic one as requests, on the stream of the call
// they belong to; progress comes back under the client's own token.
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
// through [Front.ClientOptionsFor]. The front client's roots and logging
// level are set on every supervisor (Options.Supervisors), and the
// servers' log messages relayed.
package front

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a [Front]. Registry is required.
type Options struct {
	// Registry holds the tools to serve; the supervisors publish to it.
	Registry *conn.ToolRegistry
	// Status returns the status of the supervisor of a server, for the
	// outage messages. Nil, or a false answer, gives messages without the
	// state and schedule.
	Status func(server string) (conn.Status, bool)
	// Clock is the supervisors' clock, to say when the next attempt is.
	// Nil means the real clock.
	Clock clock.Clock
	// Logger receives the front's logs. Nil means slog.Default().
	Logger *slog.Logger
	// Implementation names the front server to its clients. Nil means
	// {Name: "mcpfsm", Version: "dev"}.
	Implementation *mcp.Implementation
	// Catalog holds the resources, resource templates and prompts to
	// serve; the supervisors publish to it (conn.Config.Catalog). Nil
	// serves tools only.
	Catalog *conn.Catalog
	// Supervisor returns the supervisor of a server: resource
	// subscriptions and completions go to it. Nil, or a false answer,
	// fails them with an error naming the server.
	Supervisor func(server string) (*conn.Supervisor, bool)
	// Supervisors returns every running supervisor: the front client's
	// roots are set on each of them ([conn.Supervisor.SetRoots]). Nil
	// forwards no roots.
	Supervisors func() []*conn.Supervisor
	// Audit, if set, receives one record per tool call, resource read and
	// prompt get of the front's clients.
	Audit *audit.Log
	// Names says what tools and prompts are called: "" or NamesPrefixed
	// for mcp__<server>__<name>, NamesRaw for the servers' own names.
	Names Names
}

// Front is one MCP server that fronts the tools of a registry. Create it
// with [New]; serve it with [Front.Run] or [Front.Handler] while
// [Front.Sync] mirrors the registry.
type Front struct {
	opts   Options
	server *mcp.Server

	mu              sync.Mutex                 // serialises sync and syncCatalog
	served          map[string]json.RawMessage // served name -> served definition
	toolPublic      map[string]string          // served name -> public name of the tool
	servedResources map[string]string          // front URI -> served definition
	servedTemplates map[string]string          // front URI template -> served definition
	servedPrompts   map[string]string          // public name -> served definition
	view            atomic.Pointer[catalogView]

	wmu    sync.Mutex
	warned map[string]bool // catalog entries already reported as not served

	subs     subscriptions
	peers    peers
	roots    rootsRelay
	logs     logRelay
	progress progressTokens
	bridges  bridges

	tmu   sync.Mutex
	moved chan struct{} // closed and replaced at every Observe
}

// New returns a Front over o.Registry. It serves no tools until the first
// [Front.Sync] or [Front.Run].
func New(o Options) *Front {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "mcpfsm", Version: "dev"}
	}
	f := &Front{opts: o, served: map[string]json.RawMessage{}, toolPublic: map[string]string{}, moved: make(chan struct{}),
		servedResources: map[string]string{}, servedTemplates: map[string]string{}, servedPrompts: map[string]string{},
		warned: map[string]bool{}}
	f.subs.init()
	// Tools (and resources and prompts) come and go with the supervised
	// servers: always announce the capabilities with list_changed, even
	// with nothing listed yet.
	instructions := "Tools of several MCP servers, supervised by mcpfsm: a tool named mcp__<server>__<tool> " +
		"belongs to <server>. While a server reconnects, its tools answer at once with an error saying when to retry."
	if o.Names == NamesRaw {
		instructions = "Tools of several MCP servers, supervised by mcpfsm, under their servers' own names " +
			"(mcp__<server>__<tool> for a name an earlier server has). While a server reconnects, its tools answer at once with an error saying when to retry."
	}
	opts := &mcp.ServerOptions{
		Capabilities:       &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Instructions:       instructions,
		InitializedHandler: f.initialized,
		//lint:ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded.
		RootsListChangedHandler: f.rootsChanged,
	}
	//lint:ignore SA1019 logging is deprecated upstream (SEP-2577) but still relayed.
	opts.Capabilities.Logging = &mcp.LoggingCapabilities{}
	if o.Catalog != nil {
		opts.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
		opts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		opts.Capabilities.Completions = &mcp.CompletionCapabilities{}
		opts.SubscribeHandler, opts.UnsubscribeHandler = f.subscribe, f.unsubscribe
		opts.CompletionHandler = f.complete
		opts.Instructions += " Prompts are named like tools. A resource is listed under its server's own URI, or as " +
			RoutePrefix + "<server>/<uri> when an earlier server lists the same URI."
	}
	f.server = mcp.NewServer(o.Implementation, opts)
	f.server.AddReceivingMiddleware(f.rootsMiddleware, f.levelMiddleware, f.downMiddleware)
	if o.Catalog != nil {
		// Every read is routed here, listed or not: a URI built from a
		// template, or named by a tool's resource link, reaches its server.
		f.server.AddReceivingMiddleware(f.readMiddleware)
	}
	f.server.AddReceivingMiddleware(f.eraMiddleware) // outermost: added last
	return f
}

// Observe takes note of a transition of a supervisor. Pass it as (or call
// it from) conn.Config.OnTransition: a call whose connection ends under it
// then waits for the supervisor to register the loss, so that its error
// says when the next attempt is, and a server established again gets the
// front client's logging level. It never blocks.
func (f *Front) Observe(t conn.Transition) {
	f.levelAfter(t)
	f.tmu.Lock()
	defer f.tmu.Unlock()
	close(f.moved)
	f.moved = make(chan struct{})
}

// transitioned returns a channel closed at the next Observe.
func (f *Front) transitioned() <-chan struct{} {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	return f.moved
}

// Server returns the MCP server, for transports other than Run's and
// Handler's. Its tools are those of the last sync.
func (f *Front) Server() *mcp.Server { return f.server }

// Run serves one client over t (such as &mcp.StdioTransport{}) until the
// client disconnects or ctx is done, mirroring the registry meanwhile.
func (f *Front) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.Update()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Sync(ctx)
	}()
	defer func() { cancel(); <-done; f.roots.wait(); f.logs.wg.Wait() }()
	return f.server.Run(ctx, t)
}

// Sync mirrors the registry (and the catalog) into the server until ctx
// is done: at once, then at every change of either.
func (f *Front) Sync(ctx context.Context) {
	f.Update()
	for {
		changed := f.opts.Registry.Changed() // before reading: no change is missed
		var catChanged <-chan struct{}
		if f.opts.Catalog != nil {
			catChanged = f.opts.Catalog.Changed()
		}
		f.Update()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-catChanged:
		}
	}
}

// Update brings the served tools, resources, resource templates and
// prompts in line with the registry and the catalog once. Sync and Run
// call it at every change; a host that serves the front another way calls
// it before it accepts clients, so that their first lists are complete.
func (f *Front) Update() { f.sync(); f.syncCatalog() }

// sync brings the served tools in line with the registry. The server
// notifies its clients (debounced) of each Add and Remove, so a registry
// change that leaves every definition as it was sends nothing.
func (f *Front) sync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := map[string]*mcp.Tool{}
	defs := map[string]json.RawMessage{}
	tools := f.opts.Registry.Tools()
	entries := make([]named, 0, len(tools))
	for _, t := range tools {
		e := named{server: t.Server, public: t.Name}
		if t.Raw != nil {
			e.raw = t.Raw.Name
		}
		entries = append(entries, e)
	}
	names := f.servedNames("tool", entries)
	public := map[string]string{}
	for _, t := range tools {
		name := names[t.Name]
		def, raw, err := frontTool(t, name)
		if err != nil {
			if _, warned := f.served[name]; !warned {
				f.opts.Logger.Warn("tool not served: "+err.Error(), "server", t.Server, "tool", t.Name)
			}
			continue
		}
		want[name], defs[name], public[name] = def, raw, t.Name
	}
	f.toolPublic = public
	var gone []string
	for name := range f.served {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		f.server.RemoveTools(gone...)
		for _, name := range gone {
			delete(f.served, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if old, ok := f.served[name]; ok && string(old) == string(defs[name]) {
			continue
		}
		f.server.AddTool(want[name], f.handler(name))
		f.served[name] = defs[name]
	}
}

// frontTool is the definition t is served under: the server's own, named
// name. The SDK panics on a tool without an object input schema, so such
// a tool is refused here.
func frontTool(t conn.Tool, name string) (*mcp.Tool, json.RawMessage, error) {
	if t.Raw == nil {
		return nil, nil, fmt.Errorf("tool %q has no definition", t.Name)
	}
	def := *t.Raw
	def.Name = name
	var schema struct {
		Type any `json:"type"`
	}
	b, err := json.Marshal(def.InputSchema)
	if err != nil || def.InputSchema == nil || json.Unmarshal(b, &schema) != nil || schema.Type != "object" {
		return nil, nil, fmt.Errorf("tool %q: its inputSchema is not a JSON schema of type \"object\"", t.Name)
	}
	raw, err := json.Marshal(&def)
	if err != nil {
		return nil, nil, fmt.Errorf("tool %q: %v", t.Name, err)
	}
	return &def, raw, nil
}

// publicTool is the public name of the tool served as name: the
// registry's key for it.
func (f *Front) publicTool(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.toolPublic[name]; ok {
		return p
	}
	return name
}
