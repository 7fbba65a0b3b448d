// Package toolglob is the one pattern syntax for tool and prompt names in
// mcpfsm's config: a server's includeTools and excludeTools, and its
// toolScopes. '*' matches any run of characters (also none, also '/');
// every other character matches only itself. Tool names are not paths, so
// path.Match's '*', which stops at '/', would surprise.
package toolglob

import (
	"fmt"
	"strings"
	"unicode"
)

// Match reports whether name matches pattern.
func Match(pattern, name string) bool {
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

// Literal reports whether pattern has no wildcard: it matches one name.
func Literal(pattern string) bool { return !strings.Contains(pattern, "*") }

// forbidden are the characters a pattern must not hold: wildcards of
// other glob syntaxes, which would silently match nothing here.
const forbidden = `?[]{}\`

// Check returns why p is not a tool name pattern, or "".
func Check(p string) string {
	switch {
	case p == "":
		return "must not be empty: give a tool name, with * matching any run of characters"
	case strings.ContainsAny(p, forbidden):
		return fmt.Sprintf("%q is not a tool name pattern: only * is a wildcard (? [ ] { } \\ are not); give the tool's name, as in \"read_*\"", p)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Sprintf("%q is not a tool name pattern: tool names hold no spaces or control characters", p)
	}
	return ""
}
