package config

import (
	"net/url"

	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// The values of Server.Isolation.
const (
	// IsolationPerClient gives each client of mcpfsm serve's HTTP front an
	// instance of the server of its own (the default).
	IsolationPerClient = "per-client"
	// IsolationShared serves every client from one instance.
	IsolationShared = "shared"
)

// isolation reads "isolation": how serve's clients share the server.
func isolation(p *parser, e *entry, m member, path string) {
	v, ok := p.str(m.Value, path)
	switch {
	case !ok:
	case v == IsolationPerClient || v == IsolationShared:
		e.s.Isolation = v
	default:
		p.addf("%s must be %q (each client its own instance of the server, the default) or %q (one instance for all clients), not %q",
			path, IsolationPerClient, IsolationShared, v)
	}
}

func maxInstances(p *parser, e *entry, m member, path string) {
	e.s.MaxInstances = p.positiveInt(m.Value, path, "the most instances of the server at once, one per client")
}

// roots reads "roots": the root URIs a shared server is offered.
func roots(p *parser, e *entry, m member, path string) {
	uris := p.stringArray(m.Value, path)
	for i, s := range uris {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" {
			p.addf("%s must be an absolute URI such as file:///srv/data, not %q", tree.Index(path, i), s)
		}
	}
	e.s.Roots = uris
}
