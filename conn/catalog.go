package conn

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn/internal/publish"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Catalog is the union of the resources, resource templates and prompts of
// every server supervised with it (Config.Catalog), for a host that shows
// them to a model and reads them by a stable name. A supervisor lists its
// server's catalog at connect and again on each resources or prompts
// list_changed notification, and swaps it in all or nothing, like its
// tools. During an outage the last catalog stays listed and reading from
// it fails fast with an error matching [ErrUnavailable]; at exhaustion and
// at Close it is dropped. A server that does not advertise resources or
// prompts simply lists none. The zero value is not usable; call
// [NewCatalog].
type Catalog struct {
	shelf publish.Shelf[catalogReader, *serverCatalog] // each server reserved by its supervisor
}

// serverCatalog is one listing of one server, built whole before it is
// published.
type serverCatalog struct {
	resources []Resource
	templates []ResourceTemplate
	prompts   []Prompt
}

// Resource is one resource a server listed.
type Resource struct {
	Server string        // the supervisor's Name
	Raw    *mcp.Resource // as the server listed it; Raw.URI names it on the wire
	sup    catalogReader // the supervisor that listed it
}

// Read reads the resource through its server's supervisor; see
// [Supervisor.ReadResource].
func (r Resource) Read(ctx context.Context) (*mcp.ReadResourceResult, error) {
	if r.sup == nil || r.Raw == nil {
		return nil, fmt.Errorf("conn: resource of server %q was not published by a supervisor", r.Server)
	}
	return r.sup.ReadResource(ctx, r.Raw.URI)
}

// ResourceTemplate is one resource template a server listed. Read a
// resource built from it with [Catalog.ReadResource].
type ResourceTemplate struct {
	Server string
	Raw    *mcp.ResourceTemplate
}

// Prompt is one prompt a server listed, under a public name built like a
// tool's ([PublicToolName]), unique across the servers of one Catalog.
type Prompt struct {
	Name   string // mcp__<server>__<prompt>
	Server string
	Raw    *mcp.Prompt   // Raw.Name is what goes on the wire
	sup    catalogReader // the supervisor that listed it
}

// Get gets the prompt through its server's supervisor; see
// [Supervisor.GetPrompt].
func (p Prompt) Get(ctx context.Context, args map[string]string) (*mcp.GetPromptResult, error) {
	if p.sup == nil || p.Raw == nil {
		return nil, fmt.Errorf("conn: prompt %q was not published by a supervisor", p.Name)
	}
	return p.sup.GetPrompt(ctx, p.Raw.Name, args)
}

// catalogReader is what a catalog's entries are read through: the
// [*Supervisor] of their server.
type catalogReader interface {
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog { return new(Catalog) }

// Changed returns a channel closed at the next change of the catalog: one
// server's listing swapped in or dropped is one change. Take the channel
// before reading the catalog, as with [ToolRegistry.Changed].
func (c *Catalog) Changed() <-chan struct{} { return c.shelf.Changed() }

// reserve claims server for s, as Start does with a registry; its
// release drops the server's listing.
func (c *Catalog) reserve(server string, s catalogReader) (func(), error) {
	release, err := c.shelf.Reserve(server, s)
	if err != nil {
		return nil, duplicateServer(server, "catalog")
	}
	return release, nil
}

// publish swaps in a server's listing (nil drops it) in one step.
func (c *Catalog) publish(server string, cat *serverCatalog) {
	if cat == nil {
		c.shelf.Drop(server)
		return
	}
	c.shelf.Put(server, cat, nil)
}

// Resources returns every listed resource, sorted by server, then URI.
func (c *Catalog) Resources() []Resource {
	return publish.Collect(&c.shelf, func(sc *serverCatalog) []Resource { return sc.resources })
}

// ResourceTemplates returns every listed resource template, sorted by
// server, then URI template.
func (c *Catalog) ResourceTemplates() []ResourceTemplate {
	return publish.Collect(&c.shelf, func(sc *serverCatalog) []ResourceTemplate { return sc.templates })
}

// Prompts returns every listed prompt, sorted by public name.
func (c *Catalog) Prompts() []Prompt {
	out := publish.Collect(&c.shelf, func(sc *serverCatalog) []Prompt { return sc.prompts })
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LookupPrompt returns the prompt listed under a public name.
func (c *Catalog) LookupPrompt(publicName string) (Prompt, bool) {
	for _, p := range c.Prompts() {
		if p.Name == publicName {
			return p, true
		}
	}
	return Prompt{}, false
}

// GetPrompt gets the prompt listed under publicName; see [Prompt.Get].
func (c *Catalog) GetPrompt(ctx context.Context, publicName string, args map[string]string) (*mcp.GetPromptResult, error) {
	p, ok := c.LookupPrompt(publicName)
	if !ok {
		return nil, fmt.Errorf("conn: no prompt named %q is listed", publicName)
	}
	return p.Get(ctx, args)
}

// ReadResource reads uri from the named server, whether the server listed
// it or it was built from one of its templates. The server must be
// supervised with this catalog.
func (c *Catalog) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	s, ok := c.shelf.Owner(server)
	if !ok {
		return nil, fmt.Errorf("conn: no server named %q is supervised with this catalog", server)
	}
	return s.ReadResource(ctx, uri)
}

// listAll drains a paginated listing into entries sorted by key, refusing
// duplicate keys and lists longer than MaxTools.
func listAll[R any, T any](ctx context.Context, what string, seq iter.Seq2[*R, error], mk func(*R) (T, string)) ([]T, error) {
	type keyed struct {
		key string
		v   T
	}
	var out []keyed
	seen := map[string]bool{}
	for raw, err := range seq {
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, causeOf(ctx, err))
		}
		if raw == nil {
			continue
		}
		v, key := mk(raw)
		if seen[key] {
			return nil, fmt.Errorf("list %s: %q is listed twice", what, key)
		}
		if len(out) == MaxTools {
			return nil, fmt.Errorf("list %s: more than %d", what, MaxTools)
		}
		seen[key] = true
		out = append(out, keyed{key, v})
	}
	slices.SortFunc(out, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	vs := make([]T, len(out))
	for i, k := range out {
		vs[i] = k.v
	}
	return vs, nil
}
