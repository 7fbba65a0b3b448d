package front

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// view is what one client is served: its server's tools, resources,
// templates and prompts, each under the name the client knows it by.
// Only a definition that changed is added or removed, so the SDK
// notifies the client of real changes only (a reconnect that lists the
// same tools sends nothing).
type view struct {
	// updating serialises updates whole, from the read of the sources to
	// the sync: two at once (Sync's and a reload's, say) could otherwise
	// sync an older read over a newer one, and the client would miss a
	// server's tools until the next change.
	updating        sync.Mutex
	mu              sync.Mutex                 // serialises syncs
	served          map[string]json.RawMessage // served name -> served definition
	toolPublic      map[string]string          // served name -> public name of the tool
	hidden          map[string]string          // served name -> public name of a tool the client's caller may not see
	servedResources map[string]string          // front URI -> served definition
	servedTemplates map[string]string          // front URI template -> served definition
	servedPrompts   map[string]string          // served name -> served definition
	cat             atomic.Pointer[catalogView]
}

func (v *view) init() {
	v.served, v.toolPublic = map[string]json.RawMessage{}, map[string]string{}
	v.servedResources, v.servedTemplates, v.servedPrompts = map[string]string{}, map[string]string{}, map[string]string{}
}

// source is where instances publish: a registry, and a catalog (nil
// when the front serves tools only).
type source struct {
	reg *conn.ToolRegistry
	cat *conn.Catalog
}

// sources are the registries and catalogs of a client's own listings.
type sources []source

func (ss sources) tools() []conn.Tool {
	var out []conn.Tool
	for _, s := range ss {
		out = append(out, s.reg.Tools()...)
	}
	return out
}

func (ss sources) resources() []conn.Resource {
	var out []conn.Resource
	for _, s := range ss {
		if s.cat != nil {
			out = append(out, s.cat.Resources()...)
		}
	}
	return out
}

func (ss sources) templates() []conn.ResourceTemplate {
	var out []conn.ResourceTemplate
	for _, s := range ss {
		if s.cat != nil {
			out = append(out, s.cat.ResourceTemplates()...)
		}
	}
	return out
}

func (ss sources) prompts() []conn.Prompt {
	var out []conn.Prompt
	for _, s := range ss {
		if s.cat != nil {
			out = append(out, s.cat.Prompts()...)
		}
	}
	return out
}

// rawName is the server's own name of t.
func rawName(t conn.Tool) string {
	if t.Raw != nil {
		return t.Raw.Name
	}
	_, name, _ := conn.SplitToolName(t.Name)
	return name
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

// apply makes served (key -> JSON definition) match want: removes what
// went, adds what is new or changed, in key order.
func apply[T any](served map[string]string, want map[string]*T, remove func(...string), add func(*T)) {
	var gone []string
	for k := range served {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		remove(gone...)
		for _, k := range gone {
			delete(served, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		b, err := json.Marshal(want[k])
		if err != nil {
			continue
		}
		if old, ok := served[k]; ok && old == string(b) {
			continue
		}
		add(want[k])
		served[k] = string(b)
	}
}
