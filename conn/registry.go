package conn

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpfsm/mcpfsm/conn/internal/publish"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// MaxTools is the most tools one server may list. A longer list is an
// invalid list: a hostile or broken server cannot exhaust the host's memory.
const MaxTools = 50_000

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

// ToolRegistry is the ready-made [Registry], [Replacer] and
// [ServerReserver]: a concurrency-safe map from public tool name to
// [Tool]. The zero value is an empty registry ready to use, as is the one
// [NewRegistry] returns. A ToolRegistry must not be copied after first use.
type ToolRegistry struct {
	set publish.Set[Tool, toolKeys]
}

// toolKeys names a tool by its public name; a registered tool is still
// the one a supervisor registered while server and generation agree.
type toolKeys struct{}

func (toolKeys) Name(t Tool) string       { return t.Name }
func (toolKeys) Same(held, old Tool) bool { return held.Server == old.Server && held.gen == old.gen }

// NewRegistry returns an empty registry; new(ToolRegistry) is the same.
func NewRegistry() *ToolRegistry { return new(ToolRegistry) }

// Register adds t under t.Name. It fails with [ErrToolConflict] when the name
// is taken. The returned function removes this registration (and only this
// one) and may be called any number of times.
func (r *ToolRegistry) Register(t Tool) (func(), error) {
	un, err := r.set.Register(t)
	if err != nil {
		return nil, refusedTool(err)
	}
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
func (r *ToolRegistry) Changed() <-chan struct{} { return r.set.Changed() }

// Replace implements [Replacer]: under one lock it removes those of old
// that are still registered as they were, and adds next. If any tool of
// next conflicts with a tool that stays, nothing changes.
func (r *ToolRegistry) Replace(old, next []Tool) ([]func(), error) {
	uns, err := r.set.Replace(old, next)
	if err != nil {
		return nil, refusedTool(err)
	}
	return uns, nil
}

// Reserve claims a server name for one supervisor. It fails with
// [ErrDuplicateServer] while another supervisor holds the name.
func (r *ToolRegistry) Reserve(server string) (func(), error) {
	release, err := r.set.Reserve(server)
	if err != nil {
		return nil, duplicateServer(server, "registry")
	}
	return release, nil
}

// Tools returns the registered tools sorted by public name.
func (r *ToolRegistry) Tools() []Tool { return r.set.List() }

// Lookup returns the tool registered under a public name.
func (r *ToolRegistry) Lookup(publicName string) (Tool, bool) { return r.set.Lookup(publicName) }

// Call calls the tool registered under publicName; see [Tool.Call].
func (r *ToolRegistry) Call(ctx context.Context, publicName string, args any) (*mcp.CallToolResult, error) {
	t, ok := r.Lookup(publicName)
	if !ok {
		return nil, fmt.Errorf("conn: no tool named %q is registered", publicName)
	}
	return t.Call(ctx, args)
}

// refusedTool words a refusal of the tool set in conn's terms.
func refusedTool(err error) error {
	var r *publish.Refused[Tool]
	if !errors.As(err, &r) {
		return err
	}
	switch r.Why {
	case publish.ErrEmptyName:
		return fmt.Errorf("conn: register tool: empty public name (server %q)", r.Value.Server)
	case publish.ErrTwice:
		return fmt.Errorf("%w: %q appears twice in one replacement", ErrToolConflict, r.Name)
	default:
		return fmt.Errorf("%w: %q is registered by server %q; rename one server or drop one of them",
			ErrToolConflict, r.Name, r.Holder.Server)
	}
}

// duplicateServer is the error of a server name reserved twice with one
// registry or catalog (what).
func duplicateServer(server, what string) error {
	return fmt.Errorf("%w: %q is already supervised with this %s; give each server a distinct Name",
		ErrDuplicateServer, server, what)
}

// MaxToolNameLen is the longest public tool name [PublicToolName] returns,
// the limit model APIs place on function names.
const MaxToolNameLen = 64

// The limit is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one publish applies.
const _ = uint(MaxToolNameLen-publish.MaxNameLen) + uint(publish.MaxNameLen-MaxToolNameLen)

// PublicToolName returns the name under which a server's tool is published:
// "mcp__<server>__<raw>", with every character outside [A-Za-z0-9_-]
// replaced by '_', at most [MaxToolNameLen] characters. When that
// normalisation or truncation changed anything, a '_' and the first 12 hex
// digits of SHA-256("<server>\x00<raw>") are appended. A name is also
// hashed when the server name contains "__" or ends in '_' (the split would
// be ambiguous) and when the raw name itself ends in '_' and 12 hex digits
// (it could pose as another tool's hashed name). So an unchanged name never
// looks hashed, and two hashed names are equal only if their identities'
// hashes collide: distinct (server, raw) identities do not share a public
// name. The raw name alone is what goes on the wire.
//
// The result is a pure function of its inputs: a recovered server with an
// unchanged tool list gets identical names.
func PublicToolName(server, raw string) string { return publish.PublicName(server, raw) }

// SplitToolName splits a public tool name ([PublicToolName]) into the
// server's name and the rest, the tool's part: "mcp__fs__read" is "fs" and
// "read". A server name never holds "__", so the split is unambiguous; the
// tool's part is the raw name only when PublicToolName changed nothing (it
// may be normalised, truncated and hashed). ok is false for a name of no
// such shape.
func SplitToolName(public string) (server, tool string, ok bool) { return publish.Split(public) }
