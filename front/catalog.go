package front

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// RoutePrefix starts a resource URI (or URI template) that names its
// server explicitly: mcpfsm:<server>/<the server's own URI>. The front
// lists a resource under its server's own URI when no server earlier in
// name order lists the same URI; a resource whose URI is taken is listed
// under the routed form. A client may read, subscribe to or complete any
// resource of a server through the routed form, listed or not.
const RoutePrefix = "mcpfsm:"

// RoutedURI is uri of server in the routed form, such as
// mcpfsm:fs/file:///etc/hosts.
func RoutedURI(server, uri string) string { return RoutePrefix + server + "/" + uri }

// parseRouted splits a routed URI into its server and the server's URI.
func parseRouted(uri string) (server, rest string, ok bool) {
	s, found := strings.CutPrefix(uri, RoutePrefix)
	if !found {
		return "", "", false
	}
	server, rest, ok = strings.Cut(s, "/")
	return server, rest, ok && conn.ValidName(server) && rest != ""
}

// catalogView is one sync's view of the catalog: what is served, and how
// front URIs route back to servers.
type catalogView struct {
	resources map[string]target      // front URI -> server and the server's URI
	templates []templateRoute        // every server's templates, in server order
	prompts   map[string]conn.Prompt // served name -> prompt
}

// publicPrompt is the public name of the prompt served as name.
func (v *catalogView) publicPrompt(name string) string {
	if v != nil {
		if p, ok := v.prompts[name]; ok {
			return p.Name
		}
	}
	return name
}

// target is a resource of one server.
type target struct{ server, uri string }

// templateRoute is one server's template, compiled for matching.
type templateRoute struct {
	server, front string
	raw           *mcp.ResourceTemplate
	tmpl          *uritemplate.Template
}

// syncCatalog brings the served resources, templates and prompts in line
// with the catalog, as sync does with tools: only a definition that
// changed is added or removed, so the SDK notifies the clients of real
// changes only.
func (f *Front) syncCatalog() {
	if f.opts.Catalog == nil {
		return
	}
	view := &catalogView{resources: map[string]target{}, prompts: map[string]conn.Prompt{}}
	resources := map[string]*mcp.Resource{}
	for _, r := range f.opts.Catalog.Resources() { // sorted by server: the first lister owns a URI
		front := r.Raw.URI
		if _, taken := view.resources[front]; taken {
			front = RoutedURI(r.Server, r.Raw.URI)
		}
		def := *r.Raw
		def.URI = front
		if !validURI(front) {
			f.warnOnce("resource", r.Server, r.Raw.URI, "its URI is not an absolute URI")
			continue
		}
		view.resources[front] = target{r.Server, r.Raw.URI}
		resources[front] = &def
	}
	templates := map[string]*mcp.ResourceTemplate{}
	for _, t := range f.opts.Catalog.ResourceTemplates() {
		front := t.Raw.URITemplate
		if _, taken := templates[front]; taken {
			front = RoutedURI(t.Server, t.Raw.URITemplate)
		}
		tmpl, err := uritemplate.New(t.Raw.URITemplate)
		_, ferr := uritemplate.New(front)
		if err != nil || ferr != nil {
			f.warnOnce("resource template", t.Server, t.Raw.URITemplate, "it is not a valid absolute URI template")
			continue
		}
		def := *t.Raw
		def.URITemplate = front
		templates[front] = &def
		view.templates = append(view.templates, templateRoute{server: t.Server, front: front, raw: t.Raw, tmpl: tmpl})
	}
	prompts := map[string]*mcp.Prompt{}
	listed := f.opts.Catalog.Prompts()
	entries := make([]named, 0, len(listed))
	for _, p := range listed {
		entries = append(entries, named{server: p.Server, raw: p.Raw.Name, public: p.Name})
	}
	names := f.servedNames("prompt", entries)
	for _, p := range listed {
		def := *p.Raw
		def.Name = names[p.Name]
		prompts[def.Name] = &def
		view.prompts[def.Name] = p
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.view.Store(view)
	apply(f.servedResources, resources, f.server.RemoveResources, func(r *mcp.Resource) {
		f.server.AddResource(r, f.readHandler)
	})
	apply(f.servedTemplates, templates, f.server.RemoveResourceTemplates, func(t *mcp.ResourceTemplate) {
		f.server.AddResourceTemplate(t, f.readHandler)
	})
	apply(f.servedPrompts, prompts, f.server.RemovePrompts, func(p *mcp.Prompt) {
		f.server.AddPrompt(p, f.promptHandler(p.Name))
	})
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

// validURI reports whether the SDK accepts uri as a resource's: an
// absolute URI, with a scheme.
func validURI(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && u.Scheme != ""
}

// warnOnce logs, once per entry, why an entry of the catalog is not served.
func (f *Front) warnOnce(kind, server, name, why string) {
	key := kind + "\x00" + server + "\x00" + name
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.warned[key] {
		return
	}
	f.warned[key] = true
	f.opts.Logger.Warn(kind+" not served: "+why, "server", server, "uri", name)
}

// route finds the server and the server's URI for a front URI: the routed
// form names them; a listed URI is its owner's; otherwise the first
// server (in name order) with a template that matches it.
func (v *catalogView) route(uri string) (target, bool) {
	if server, rest, ok := parseRouted(uri); ok {
		return target{server, rest}, true
	}
	if v == nil {
		return target{}, false
	}
	if t, ok := v.resources[uri]; ok {
		return t, true
	}
	for _, t := range v.templates {
		if t.tmpl.Regexp().MatchString(uri) {
			return target{t.server, uri}, true
		}
	}
	return target{}, false
}

// routeTemplate finds the server of a template as the client names it
// (the listed form), for completion/complete.
func (v *catalogView) routeTemplate(uri string) (target, bool) {
	if v != nil {
		for _, t := range v.templates {
			if t.front == uri {
				return target{t.server, t.raw.URITemplate}, true
			}
		}
	}
	if server, rest, ok := parseRouted(uri); ok {
		return target{server, rest}, true
	}
	return target{}, false
}
