package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
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

// matchTool reports whether name matches pattern, where '*' matches any
// run of characters (also none, also '/') and every other character only
// itself. Tool names are not paths, so path.Match's '*', which stops at
// '/', would surprise.
func matchTool(pattern, name string) bool {
	first, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == name
	}
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	for {
		// rest follows a '*': try every suffix, shortest skip first.
		next, after, more := strings.Cut(rest, "*")
		if !more {
			return strings.HasSuffix(name, rest)
		}
		i := strings.Index(name, next)
		if i < 0 {
			return false
		}
		name, rest = name[i+len(next):], after
	}
}

// toolPatternChars are the characters a pattern must not hold: wildcards
// of other glob syntaxes, which would silently match nothing here.
const toolPatternChars = `?[]{}\`

// checkToolPattern returns why p is not a tool name pattern, or "".
func checkToolPattern(p string) string {
	switch {
	case p == "":
		return "must not be empty: give a tool name, with * matching any run of characters"
	case strings.ContainsAny(p, toolPatternChars):
		return fmt.Sprintf("%q is not a tool name pattern: only * is a wildcard (? [ ] { } \\ are not); give the tool's name, as in \"read_*\"", p)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Sprintf("%q is not a tool name pattern: tool names hold no spaces or control characters", p)
	}
	return ""
}

// toolList parses an array of tool name patterns, the value at path.
// Names are taken literally: no variables are substituted in them.
func (p *parser) toolList(raw json.RawMessage, path string) []string {
	if k := kind(raw); k != "array" {
		p.addf("%s must be an array of tool names, not %s", path, article(k))
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		p.addf("%s is not valid JSON: %v", path, err)
		return nil
	}
	if len(elems) == 0 {
		p.warnf("%s is empty: it filters nothing; remove it, or list tool names", path)
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		epath := fmt.Sprintf("%s[%d]", path, i)
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
func (p *parser) positiveInt(raw json.RawMessage, path, what string) int {
	if k := kind(raw); k != "number" {
		p.addf("%s must be a positive integer (%s), not %s", path, what, article(k))
		return 0
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > maxConcurrentCallsLimit || n != float64(int(n)) {
		p.addf("%s must be a positive integer (%s), at most %d; omit it for no limit", path, what, maxConcurrentCallsLimit)
		return 0
	}
	return int(n)
}
