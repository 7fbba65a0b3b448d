package front

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// own is the set of servers whose listing c is served from its own
// instance: those whose instance has listed since it started; for a
// 2026-07-28 client, also the shared servers whose instance of its era
// has (erainstance.go). mine lists what those instances publish.
func (c *client) own() (own map[string]bool, mine sources) {
	c.mu.Lock()
	instances := c.instanceSet()
	c.mu.Unlock()
	own, mine = map[string]bool{}, sources{{c.reg, c.cat}}
	for name, in := range instances {
		if in.Listing() {
			own[name] = true
		}
	}
	if c.kind == subjectClient {
		for name, ei := range c.f.listingEras() {
			own[name] = true
			mine = append(mine, source{ei.reg, ei.cat})
		}
	}
	return own, mine
}

// update brings c's view in line with its sources: the shared
// instances' listings, and its own instances' for the servers it has one
// of.
func (c *client) update() {
	c.view.updating.Lock()
	defer c.view.updating.Unlock()
	own, mine := c.own()
	var tools []conn.Tool
	for _, t := range c.f.opts.Registry.Tools() {
		if !own[t.Server] {
			tools = append(tools, t)
		}
	}
	if len(own) > 0 {
		for _, t := range mine.tools() {
			if own[t.Server] {
				tools = append(tools, t)
			}
		}
	}
	signIn := c.awaitingSignIn() // signin.go
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	c.syncTools(tools, signIn)
	if c.f.opts.Catalog != nil {
		c.syncCatalog(own, mine)
	}
}

// syncTools makes c's server serve tools, and a sign-in tool for each
// server of signIn (signin.go); c.view.mu is held.
func (c *client) syncTools(tools []conn.Tool, signIn []string) {
	v := &c.view
	want := map[string]*mcp.Tool{}
	defs := map[string]json.RawMessage{}
	entries := make([]named, 0, len(tools))
	for _, t := range tools {
		e := named{server: t.Server, public: t.Name}
		if t.Raw != nil {
			e.raw = t.Raw.Name
		}
		entries = append(entries, e)
	}
	// Names are given over every tool, those the caller may not see
	// included: a tool has one name whoever looks.
	names := c.f.opts.Names.servedNames(entries, func(e named, owner string) { c.f.warnShared("tool", e, owner) })
	public, hidden := map[string]string{}, map[string]string{}
	for _, t := range tools {
		name := names[t.Name]
		if !c.sees(t.Server, authz.Tool, rawName(t)) {
			hidden[name] = t.Name
			continue
		}
		def, raw, err := frontTool(t, name)
		if err != nil {
			c.f.warnOnce("tool", t.Server, t.Name, err.Error())
			continue
		}
		want[name], defs[name], public[name] = def, raw, t.Name
	}
	v.toolPublic, v.hidden = public, hidden
	signIns := c.signInEntries(signIn, want, defs)
	if c.f.opts.Tools.Search {
		want, defs = c.listed(want, defs) // search.go
	}
	var gone []string
	for name := range v.served {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		c.server.RemoveTools(gone...)
		for _, name := range gone {
			delete(v.served, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if old, ok := v.served[name]; ok && string(old) == string(defs[name]) {
			continue
		}
		h := c.toolHandler(name)
		if server, ok := signIns[name]; ok {
			h = c.signInHandler(name, server)
		}
		c.server.AddTool(want[name], h)
		v.served[name] = defs[name]
	}
}

// publicTool is the public name of the tool served as name: the
// registries' key for it.
func (c *client) publicTool(name string) string {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	if p, ok := c.view.toolPublic[name]; ok {
		return p
	}
	if p, ok := c.view.hidden[name]; ok {
		return p
	}
	return name
}

// hides reports whether name is a tool c's caller may not see.
func (c *client) hides(name string) bool {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	_, ok := c.view.hidden[name]
	return ok
}

// serves reports whether c is served a tool named name now.
func (c *client) serves(name string) bool {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	_, ok := c.view.served[name]
	return ok
}

// syncCatalog makes c's server serve the catalog's resources, templates
// and prompts, with those of the servers in own from c's own catalog;
// c.view.mu is held.
func (c *client) syncCatalog(own map[string]bool, mine sources) {
	shared := c.f.opts.Catalog
	// Each server's entries from the client's own catalog when it has an
	// instance that listed, from the shared one otherwise; only those
	// the client's caller may see.
	from := func(server string, mine bool, kind authz.Kind, name string) bool {
		return own[server] == mine && c.sees(server, kind, name)
	}
	byServer := func(a, b string) int { return cmp.Compare(a, b) }

	listed := slices.DeleteFunc(shared.Resources(), func(r conn.Resource) bool { return !from(r.Server, false, authz.Resource, r.Raw.URI) })
	listed = append(listed, slices.DeleteFunc(mine.resources(), func(r conn.Resource) bool { return !from(r.Server, true, authz.Resource, r.Raw.URI) })...)
	slices.SortStableFunc(listed, func(a, b conn.Resource) int { return byServer(a.Server, b.Server) })
	tlisted := slices.DeleteFunc(shared.ResourceTemplates(), func(t conn.ResourceTemplate) bool {
		return !from(t.Server, false, authz.Resource, t.Raw.URITemplate)
	})
	tlisted = append(tlisted, slices.DeleteFunc(mine.templates(), func(t conn.ResourceTemplate) bool {
		return !from(t.Server, true, authz.Resource, t.Raw.URITemplate)
	})...)
	slices.SortStableFunc(tlisted, func(a, b conn.ResourceTemplate) int { return byServer(a.Server, b.Server) })
	plisted := slices.DeleteFunc(shared.Prompts(), func(p conn.Prompt) bool { return !from(p.Server, false, authz.Prompt, p.Raw.Name) })
	plisted = append(plisted, slices.DeleteFunc(mine.prompts(), func(p conn.Prompt) bool { return !from(p.Server, true, authz.Prompt, p.Raw.Name) })...)
	slices.SortStableFunc(plisted, func(a, b conn.Prompt) int { return byServer(a.Server, b.Server) })

	view := &catalogView{resources: map[string]target{}, prompts: map[string]conn.Prompt{}}
	resources := map[string]*mcp.Resource{}
	for _, r := range listed { // sorted by server: the first lister owns a URI
		front := r.Raw.URI
		if _, taken := view.resources[front]; taken {
			front = RoutedURI(r.Server, r.Raw.URI)
		}
		def := *r.Raw
		def.URI = front
		if !validURI(front) {
			c.f.warnOnce("resource", r.Server, r.Raw.URI, "its URI is not an absolute URI")
			continue
		}
		view.resources[front] = target{r.Server, r.Raw.URI}
		resources[front] = &def
	}
	templates := map[string]*mcp.ResourceTemplate{}
	for _, t := range tlisted {
		front := t.Raw.URITemplate
		if _, taken := templates[front]; taken {
			front = RoutedURI(t.Server, t.Raw.URITemplate)
		}
		tmpl, err := uritemplate.New(t.Raw.URITemplate)
		_, ferr := uritemplate.New(front)
		if err != nil || ferr != nil {
			c.f.warnOnce("resource template", t.Server, t.Raw.URITemplate, "it is not a valid absolute URI template")
			continue
		}
		def := *t.Raw
		def.URITemplate = front
		templates[front] = &def
		view.templates = append(view.templates, templateRoute{server: t.Server, front: front, raw: t.Raw, tmpl: tmpl})
	}
	prompts := map[string]*mcp.Prompt{}
	entries := make([]named, 0, len(plisted))
	for _, p := range plisted {
		entries = append(entries, named{server: p.Server, raw: p.Raw.Name, public: p.Name})
	}
	names := c.f.opts.Names.servedNames(entries, func(e named, owner string) { c.f.warnShared("prompt", e, owner) })
	for _, p := range plisted {
		def := *p.Raw
		def.Name = names[p.Name]
		prompts[def.Name] = &def
		view.prompts[def.Name] = p
	}

	v := &c.view
	v.cat.Store(view)
	apply(v.servedResources, resources, c.server.RemoveResources, func(r *mcp.Resource) {
		c.server.AddResource(r, c.readHandler)
	})
	apply(v.servedTemplates, templates, c.server.RemoveResourceTemplates, func(t *mcp.ResourceTemplate) {
		c.server.AddResourceTemplate(t, c.readHandler)
	})
	apply(v.servedPrompts, prompts, c.server.RemovePrompts, func(p *mcp.Prompt) {
		c.server.AddPrompt(p, c.promptHandler(p.Name))
	})
}

// warnShared logs, once per entry, that e's own name is another server's.
func (f *Front) warnShared(kind string, e named, owner string) {
	key := kind + " shared\x00" + e.server + "\x00" + e.raw
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.warned[key] {
		return
	}
	f.warned[key] = true
	f.opts.Logger.Warn(kind+" served under its prefixed name: an earlier server (by name) has its own name (-names raw)",
		"server", e.server, "name", e.raw, "served_as", e.public, "owner", owner)
}

// warnOnce logs, once per entry, why an entry is not served.
func (f *Front) warnOnce(kind, server, name, why string) {
	key := kind + "\x00" + server + "\x00" + name
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.warned[key] {
		return
	}
	f.warned[key] = true
	f.opts.Logger.Warn(kind+" not served: "+why, "server", server, "name", name)
}
