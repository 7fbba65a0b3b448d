package conn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfsm/mcpfsm/internal/broadcast"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Registry receives the tools a [Supervisor] publishes. Register adds one
// tool under its public name and returns the function that removes it again;
// it returns an error wrapping [ErrToolConflict] when the name is taken.
//
// A Supervisor calls Register and the unregister functions from one
// goroutine at a time, but several supervisors may share a registry, so
// implementations must be safe for concurrent use. Unregister functions
// must be idempotent.
type Registry interface {
	Register(t Tool) (unregister func(), err error)
}

// ServerReserver is an optional interface of a [Registry]: Start reserves the
// supervisor's Name with it and releases the name after Close, so two live
// supervisors of one server name cannot share the registry. Reserve returns
// an error wrapping [ErrDuplicateServer] when the name is taken.
type ServerReserver interface {
	Reserve(server string) (release func(), err error)
}

// Replacer is an optional interface of a [Registry]: Replace removes the
// old tools (registered earlier by the same supervisor) and adds next in
// one step, all or nothing, so a concurrent reader sees either the old set
// or the new one, never a gap. It returns one unregister function per tool
// of next, in order. A Supervisor uses it for tool swaps when available.
type Replacer interface {
	Replace(old, next []Tool) (unregister []func(), err error)
}

// Tool is one server tool as published to a [Registry].
//
// Tools of an unchanged server compare equal across reconnects (ignoring
// unexported fields): the public name, server and raw definition are
// rebuilt identically, so a model sees a stable tool list.
type Tool struct {
	// Name is the public name, from [PublicToolName].
	Name string
	// Server is the supervisor's Name.
	Server string
	// Raw is the definition as the server listed it; Raw.Name is what goes
	// on the wire.
	Raw *mcp.Tool

	gen *generation // the generation that listed the tool; calls go there
}

// Call calls the tool on the server generation that registered it, with the
// supervisor's CallTimeout as an upper bound on the deadline. During an
// outage, after exhaustion and after Close it fails fast with an error
// matching [ErrUnavailable] that names the server and its state, unless
// Config.HoldCalls lets it wait for the next connection (see there for
// when a call is sent again).
func (t Tool) Call(ctx context.Context, args any) (*mcp.CallToolResult, error) {
	if t.gen == nil || t.Raw == nil {
		return nil, fmt.Errorf("conn: tool %q was not published by a supervisor", t.Name)
	}
	release, refused := t.gen.sup.acquire(ctx, t.Name)
	if refused != nil {
		return refused, nil
	}
	defer release()
	if t.gen.sup.cfg.HoldCalls > 0 {
		return t.gen.sup.callHeld(ctx, t, args)
	}
	return t.gen.callObserved(ctx, t.Name, t.Raw.Name, args)
}

// ToolRegistry is the ready-made [Registry], [Replacer] and
// [ServerReserver]: a concurrency-safe map from public tool name to
// [Tool]. The zero value is an empty registry ready to use, as is the one
// [NewRegistry] returns. A ToolRegistry must not be copied after first use.
type ToolRegistry struct {
	mu      sync.RWMutex
	tools   map[string]*registration
	servers map[string]*reservation
	changed broadcast.Signal // at every change of tools
}

type registration struct{ tool Tool }

// reservation is one Reserve's claim on a server name; its pointer tells
// a stale release from the current one (so it must not be zero-sized).
type reservation struct{ server string }

// NewRegistry returns an empty registry; new(ToolRegistry) is the same.
func NewRegistry() *ToolRegistry { return new(ToolRegistry) }

// init makes a zero registry usable; r.mu is held for writing.
func (r *ToolRegistry) init() {
	if r.tools == nil {
		r.tools, r.servers = map[string]*registration{}, map[string]*reservation{}
	}
}

// Register adds t under t.Name. It fails with [ErrToolConflict] when the name
// is taken. The returned function removes this registration (and only this
// one) and may be called any number of times.
func (r *ToolRegistry) Register(t Tool) (func(), error) {
	if t.Name == "" {
		return nil, fmt.Errorf("conn: register tool: empty public name (server %q)", t.Server)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	if old, ok := r.tools[t.Name]; ok {
		return nil, conflict(t, old.tool)
	}
	un := r.add(t)
	r.notify()
	return un, nil
}

// Changed returns a channel that is closed at the next change of the
// registered tools: a registration, an unregistration or a swap (one
// change, however many tools it touches). A host waits on it to refresh
// the tool list it shows a model:
//
//	for {
//		ch := reg.Changed()
//		show(reg.Tools())
//		<-ch
//	}
//
// Taking the channel before reading Tools means no change is missed.
func (r *ToolRegistry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	return r.changed.C()
}

// notify wakes the waiters of Changed; r.mu is held for writing.
func (r *ToolRegistry) notify() {
	r.changed.Notify()
}

func conflict(t, holder Tool) error {
	return fmt.Errorf("%w: %q is registered by server %q; rename one server or drop one of them",
		ErrToolConflict, t.Name, holder.Server)
}

// add inserts t and returns its unregister function; r.mu is held.
func (r *ToolRegistry) add(t Tool) func() {
	reg := &registration{tool: t}
	r.tools[t.Name] = reg
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.tools[t.Name] == reg {
			delete(r.tools, t.Name)
			r.notify()
		}
	}
}

// Replace implements [Replacer]: under one lock it removes those of old
// that are still registered as they were, and adds next. If any tool of
// next conflicts with a tool that stays, nothing changes.
func (r *ToolRegistry) Replace(old, next []Tool) ([]func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	remove := make(map[string]bool, len(old))
	for _, t := range old {
		if reg, ok := r.tools[t.Name]; ok && reg.tool.Server == t.Server && reg.tool.gen == t.gen {
			remove[t.Name] = true
		}
	}
	seen := make(map[string]bool, len(next))
	for _, t := range next {
		if t.Name == "" {
			return nil, fmt.Errorf("conn: register tool: empty public name (server %q)", t.Server)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: %q appears twice in one replacement", ErrToolConflict, t.Name)
		}
		seen[t.Name] = true
		if reg, ok := r.tools[t.Name]; ok && !remove[t.Name] {
			return nil, conflict(t, reg.tool)
		}
	}
	for name := range remove {
		delete(r.tools, name)
	}
	uns := make([]func(), len(next))
	for i, t := range next {
		uns[i] = r.add(t)
	}
	r.notify()
	return uns, nil
}

// Reserve claims a server name for one supervisor. It fails with
// [ErrDuplicateServer] while another supervisor holds the name.
func (r *ToolRegistry) Reserve(server string) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	return reserve(&r.mu, r.servers, server, &reservation{server}, "registry", nil)
}

// Tools returns the registered tools sorted by public name.
func (r *ToolRegistry) Tools() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, reg := range r.tools {
		out = append(out, reg.tool)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the tool registered under a public name.
func (r *ToolRegistry) Lookup(publicName string) (Tool, bool) {
	r.mu.RLock()
	reg, ok := r.tools[publicName]
	r.mu.RUnlock()
	if !ok {
		return Tool{}, false
	}
	return reg.tool, true
}

// Call calls the tool registered under publicName; see [Tool.Call].
func (r *ToolRegistry) Call(ctx context.Context, publicName string, args any) (*mcp.CallToolResult, error) {
	t, ok := r.Lookup(publicName)
	if !ok {
		return nil, fmt.Errorf("conn: no tool named %q is registered", publicName)
	}
	return t.Call(ctx, args)
}
