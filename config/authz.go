package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/internal/toolglob"
	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// rateLimit reads "rateLimit": each caller's calls to the server.
func rateLimit(p *parser, e *entry, m member, path string) {
	if v, ok := p.str(m.Value, path); ok {
		r, err := authz.ParseRate(v)
		if err != nil {
			p.addf("%s: %v", path, err)
		}
		e.s.RateLimit = r
	}
}

// scopeList parses a non-empty array of OAuth scopes; allow says it is
// allowScopes (whose empty list would lock every caller out).
func (p *parser) scopeList(v tree.Value, path string, allow bool) []string {
	elems, ok := p.array(v, path, "OAuth scopes")
	if !ok {
		return nil
	}
	if len(elems) == 0 {
		if allow {
			p.addf("%s is empty: no caller but the operator could use the server; list the scopes of which a caller needs one, or remove the key", path)
		} else {
			p.addf("%s is empty: list the scopes of which a caller needs one to use these tools, or remove the pattern", path)
		}
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		epath := tree.Index(path, i)
		s, ok := p.str(e, epath)
		if !ok {
			continue
		}
		if why := authz.CheckScope(s); why != "" {
			p.addf("%s: %s", epath, why)
			continue
		}
		if slices.Contains(out, s) {
			p.warnf("%s: scope %q is listed twice", epath, s)
			continue
		}
		out = append(out, s)
	}
	return out
}

func allowScopes(p *parser, e *entry, m member, path string) {
	e.s.AllowScopes = p.scopeList(m.Value, path, true)
}

// toolScopes reads an object of tool name patterns to scope lists.
func toolScopes(p *parser, e *entry, m member, path string) {
	members, ok := p.object(m.Value, path)
	if !ok {
		return
	}
	if len(members) == 0 {
		p.warnf("%s is empty: it guards nothing; remove it, or map tool name patterns to scopes", path)
		return
	}
	for _, m := range members {
		kpath := fmt.Sprintf("%s[%q]", path, m.Key)
		if why := toolglob.Check(m.Key); why != "" {
			p.addf("%s: the pattern %s", kpath, why)
			continue
		}
		if scopes := p.scopeList(m.Value, kpath, false); scopes != nil {
			e.s.ToolScopes = append(e.s.ToolScopes, authz.ToolScope{Pattern: m.Key, Scopes: scopes})
		}
	}
}

// checkPolicy warns about toolScopes patterns that can guard nothing:
// those matching none of the tools includeTools names, when it names
// them all literally, and those whose every tool excludeTools leaves out.
// Other patterns can only be checked against the server's tools, which
// 'mcpfsm check' does not start the server to learn.
func (p *parser) checkPolicy(path string, s *Server) {
	literal := len(s.IncludeTools) > 0 && !slices.ContainsFunc(s.IncludeTools, func(t string) bool { return !toolglob.Literal(t) })
	for _, ts := range s.ToolScopes {
		kpath := fmt.Sprintf("%s[%q]", pathKey(path, "toolScopes"), ts.Pattern)
		switch {
		case slices.Contains(s.ExcludeTools, ts.Pattern) || toolglob.Literal(ts.Pattern) && !s.ToolAllowed(ts.Pattern):
			p.warnf("%s guards nothing: excludeTools leaves out every tool it matches", kpath)
		case literal && !slices.ContainsFunc(s.IncludeTools, func(t string) bool { return s.ToolAllowed(t) && toolglob.Match(ts.Pattern, t) }):
			p.warnf("%s matches none of the tools includeTools serves (%s): it guards nothing", kpath, strings.Join(s.IncludeTools, ", "))
		}
	}
}

// HasPolicy reports whether s has per-caller rules or a rate limit.
func (s Server) HasPolicy() bool {
	return s.AllowScopes != nil || s.ToolScopes != nil || s.RateLimit != (authz.Rate{})
}

// Rules returns the per-caller access rules of s (allowScopes and
// toolScopes), nil when it has none. Parse has validated them: an error
// comes only from a Server built in code.
func (s Server) Rules() (*authz.Rules, error) {
	return authz.NewRules(s.Name, s.AllowScopes, s.ToolScopes)
}

// Limiter returns the per-caller rate limiter of s (rateLimit) on clk,
// nil when it has none.
func (s Server) Limiter(clk clock.Clock) *authz.Limiter {
	return authz.NewLimiter(s.Name, s.RateLimit, clk)
}

// PolicySummary describes the per-caller policy of s in one line, for
// 'mcpfsm check'; "" when it has none. toolScopes patterns are checked
// against the server's tools only when a host lists them: check starts no
// server.
func (s Server) PolicySummary() string {
	var parts []string
	if len(s.AllowScopes) > 0 {
		parts = append(parts, "callers need scope "+strings.Join(s.AllowScopes, " or "))
	}
	if n := len(s.ToolScopes); n > 0 {
		pats := make([]string, n)
		for i, ts := range s.ToolScopes {
			pats[i] = ts.Pattern
		}
		parts = append(parts, fmt.Sprintf("toolScopes for %s (matched against the server's tools when serve lists them)", strings.Join(pats, ", ")))
	}
	if s.RateLimit != (authz.Rate{}) {
		parts = append(parts, fmt.Sprintf("at most %s per caller", s.RateLimit))
	}
	return strings.Join(parts, "; ")
}
