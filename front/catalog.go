package front

import (
	"net/url"
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

// prompt is the prompt served as name, as its listing has it.
func (v *catalogView) prompt(name string) (conn.Prompt, bool) {
	if v == nil {
		return conn.Prompt{}, false
	}
	p, ok := v.prompts[name]
	return p, ok
}

// target is a resource of one server.
type target struct{ server, uri string }

// templateRoute is one server's template, compiled for matching.
type templateRoute struct {
	server, front string
	raw           *mcp.ResourceTemplate
	tmpl          *uritemplate.Template
}

// validURI reports whether the SDK accepts uri as a resource's: an
// absolute URI, with a scheme.
func validURI(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && u.Scheme != ""
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
