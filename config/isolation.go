package config

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// The values of Server.Isolation.
const (
	// IsolationPerClient gives each client of mcpfsm serve's HTTP front an
	// instance of the server of its own (the default).
	IsolationPerClient = "per-client"
	// IsolationShared serves every client from one instance.
	IsolationShared = "shared"
)

// isolationKey parses the keys that say how serve's clients share the
// server: "isolation", "maxInstances" and "roots". It reports whether
// m was one of them.
func (p *parser) isolationKey(s *Server, m member, fpath string) bool {
	switch m.key {
	case "isolation":
		v, ok := p.str(m.val, fpath)
		switch {
		case !ok:
		case v == IsolationPerClient || v == IsolationShared:
			s.Isolation = v
		default:
			p.addf("%s must be %q (each client its own instance of the server, the default) or %q (one instance for all clients), not %q",
				fpath, IsolationPerClient, IsolationShared, v)
		}
	case "maxInstances":
		s.MaxInstances = p.positiveInt(m.val, fpath, "the most instances of the server at once, one per client")
	case "roots":
		s.Roots = p.rootList(m.val, fpath)
	default:
		return false
	}
	return true
}

// rootList parses "roots": the root URIs a shared server is offered.
func (p *parser) rootList(raw json.RawMessage, path string) []string {
	uris := p.stringArray(raw, path)
	for i, s := range uris {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" {
			p.addf("%s must be an absolute URI such as file:///srv/data, not %q", fmt.Sprintf("%s[%d]", path, i), s)
		}
	}
	return uris
}
