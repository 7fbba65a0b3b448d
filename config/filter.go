package config

import (
	"github.com/mcpfsm/mcpfsm/internal/toolglob"
	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// ToolAllowed reports whether the server's tool raw (its own name, not
// the published mcp__<server>__<tool>) is to be served: it matches a
// pattern of IncludeTools, or IncludeTools is empty, and it matches no
// pattern of ExcludeTools. Exclusion wins, as in Gemini CLI and Codex.
func (s Server) ToolAllowed(raw string) bool {
	for _, p := range s.ExcludeTools {
		if matchTool(p, raw) {
			return false
		}
	}
	if len(s.IncludeTools) == 0 {
		return true
	}
	for _, p := range s.IncludeTools {
		if matchTool(p, raw) {
			return true
		}
	}
	return false
}

// matchTool reports whether name matches pattern (see package
// internal/toolglob: '*' matches any run of characters).
func matchTool(pattern, name string) bool { return toolglob.Match(pattern, name) }

// checkToolPattern returns why p is not a tool name pattern, or "".
func checkToolPattern(p string) string { return toolglob.Check(p) }

// toolList parses an array of tool name patterns, the value at path.
// Names are taken literally: no variables are substituted in them.
func (p *parser) toolList(v tree.Value, path string) []string {
	elems, ok := p.array(v, path, "tool names")
	if !ok {
		return nil
	}
	if len(elems) == 0 {
		p.warnf("%s is empty: it filters nothing; remove it, or list tool names", path)
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		epath := tree.Index(path, i)
		s, ok := p.str(e, epath)
		if !ok {
			continue
		}
		if why := checkToolPattern(s); why != "" {
			p.addf("%s %s", epath, why)
			continue
		}
		out = append(out, s)
	}
	return out
}

// maxConcurrentCallsLimit bounds maxConcurrentCalls: a larger limit is no
// limit at all.
const maxConcurrentCallsLimit = 1 << 16

// positiveInt parses a whole number from 1 to maxConcurrentCallsLimit.
func (p *parser) positiveInt(v tree.Value, path, what string) int {
	return p.whole(v, path, "a positive integer ("+what+")", maxConcurrentCallsLimit, "omit it for no limit")
}
