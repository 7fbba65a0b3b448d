package authz

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/toolglob"
)

// Kind is what a request reaches of a server.
type Kind uint8

// Kinds of request.
const (
	Tool Kind = iota + 1
	Prompt
	Resource
)

func (k Kind) String() string {
	switch k {
	case Tool:
		return "tool"
	case Prompt:
		return "prompt"
	case Resource:
		return "resource"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ToolScope is one entry of a server's toolScopes: the tools and prompts
// whose names match Pattern need one of Scopes.
type ToolScope struct {
	// Pattern is a tool or prompt name, '*' matching any run of
	// characters; the server's own names, as in includeTools.
	Pattern string
	// Scopes are the OAuth scopes of which a caller needs one.
	Scopes []string
}

// Rules are the access rules of one server. A nil *Rules lets every
// caller see and use everything. Rules never change once made; a reload
// makes new ones. They are safe for concurrent use.
type Rules struct {
	server string
	allow  []string
	tools  []ToolScope
}

// NewRules returns the rules of server: allowScopes (a caller needs one of
// them for anything of the server; empty means no such rule) and
// toolScopes (per tool or prompt pattern, on top). It returns nil rules
// when both are empty. Errors name the key and the fix.
func NewRules(server string, allowScopes []string, toolScopes []ToolScope) (*Rules, error) {
	var errs []error
	if allowScopes != nil && len(allowScopes) == 0 {
		errs = append(errs, fmt.Errorf("mcp server %q: allowScopes is empty: no caller but the operator could use the server; list the scopes that may, or omit it", server))
	}
	for _, s := range allowScopes {
		if why := CheckScope(s); why != "" {
			errs = append(errs, fmt.Errorf("mcp server %q: allowScopes: %s", server, why))
		}
	}
	for _, ts := range toolScopes {
		if why := toolglob.Check(ts.Pattern); why != "" {
			errs = append(errs, fmt.Errorf("mcp server %q: toolScopes: pattern %s", server, why))
		}
		if len(ts.Scopes) == 0 {
			errs = append(errs, fmt.Errorf("mcp server %q: toolScopes[%q] is empty: list the scopes of which a caller needs one", server, ts.Pattern))
		}
		for _, s := range ts.Scopes {
			if why := CheckScope(s); why != "" {
				errs = append(errs, fmt.Errorf("mcp server %q: toolScopes[%q]: %s", server, ts.Pattern, why))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(allowScopes) == 0 && len(toolScopes) == 0 {
		return nil, nil
	}
	r := &Rules{server: server, allow: slices.Clone(allowScopes)}
	for _, ts := range toolScopes {
		r.tools = append(r.tools, ToolScope{Pattern: ts.Pattern, Scopes: slices.Clone(ts.Scopes)})
	}
	return r, nil
}

// CheckScope returns why s is not an OAuth scope token (RFC 6749: no
// spaces, quotes or backslashes), or "".
func CheckScope(s string) string {
	if s == "" {
		return "a scope must not be empty"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' || c == '\\' || c == 0x7f {
			return fmt.Sprintf("%q is not a scope: give each scope as one token, without spaces or quotes", s)
		}
	}
	return ""
}

// Server is the name of the server the rules are of.
func (r *Rules) Server() string {
	if r == nil {
		return ""
	}
	return r.server
}

// Allow decides whether c may see and use the kind named name (a tool or
// prompt by the server's own name, a resource by its URI). When not,
// missing are the scopes of which c lacks one, for the first rule it
// fails: the caller's fix. missing is the rules' own: do not change it.
// The operator passes every rule; nil rules let everything through.
func (r *Rules) Allow(c Caller, kind Kind, name string) (ok bool, missing []string) {
	if r == nil || c.Operator {
		return true, nil
	}
	if len(r.allow) > 0 && !c.hasAny(r.allow) {
		return false, r.allow
	}
	if kind == Resource {
		return true, nil
	}
	for i := range r.tools {
		ts := &r.tools[i]
		if toolglob.Match(ts.Pattern, name) && !c.hasAny(ts.Scopes) {
			return false, ts.Scopes
		}
	}
	return true, nil
}

// Check is [Rules.Allow] as an error: nil, or a *DeniedError naming the
// missing scope.
func (r *Rules) Check(c Caller, kind Kind, name string) error {
	ok, missing := r.Allow(c, kind, name)
	if ok {
		return nil
	}
	return &DeniedError{Server: r.server, Kind: kind, Name: name, Missing: slices.Clone(missing)}
}

// Unmatched returns the toolScopes patterns that match none of names (the
// server's tools and prompts, by its own names): a rule that guards
// nothing, which a host reports as a warning once it knows the tools.
func (r *Rules) Unmatched(names []string) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, ts := range r.tools {
		if !slices.ContainsFunc(names, func(n string) bool { return toolglob.Match(ts.Pattern, n) }) {
			out = append(out, ts.Pattern)
		}
	}
	return out
}

// Equal reports whether r and o decide every request alike because they
// are the same rules (a reload that kept a server's rules changes no
// caller's view).
func (r *Rules) Equal(o *Rules) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.server == o.server && slices.Equal(r.allow, o.allow) &&
		slices.EqualFunc(r.tools, o.tools, func(a, b ToolScope) bool {
			return a.Pattern == b.Pattern && slices.Equal(a.Scopes, b.Scopes)
		})
}

// ErrDenied is matched (errors.Is) by every [DeniedError].
var ErrDenied = errors.New("denied by the server's access rules")

// DeniedError is a request refused by a server's rules. Its text names
// what was refused and the scope the caller lacks, and nothing of what
// other callers may see.
type DeniedError struct {
	Server string
	Kind   Kind
	Name   string
	// Missing are the scopes of which the caller lacks one.
	Missing []string
}

func (e *DeniedError) Error() string {
	what := fmt.Sprintf("%s %q of server %q needs", e.Kind, e.Name, e.Server)
	if e.Kind == Resource {
		what = fmt.Sprintf("the resources of server %q need", e.Server)
	}
	return fmt.Sprintf("%s %s, which this caller's token lacks; ask for an access token with it", what, scopeList(e.Missing))
}

// Is reports whether target is ErrDenied.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// scopeList names scopes for a message: `scope "a"` or `one of the scopes
// "a", "b"`.
func scopeList(scopes []string) string {
	if len(scopes) == 1 {
		return fmt.Sprintf("scope %q", scopes[0])
	}
	q := make([]string, len(scopes))
	for i, s := range scopes {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "one of the scopes " + strings.Join(q, ", ")
}
