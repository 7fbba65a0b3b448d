// Package servername is the one rule for a supervised server's name
// (conn.Config.Name, a config file's server key): the name becomes part of
// every public tool name, mcp__<server>__<tool>, and must split from it
// unambiguously.
package servername

import (
	"strconv"
	"strings"
)

// Rule states what a name must be.
const Rule = "1 to 64 characters of A-Z, a-z, 0-9, '_' and '-', without \"__\" and not ending in '_'"

// Valid reports whether name follows [Rule].
func Valid(name string) bool {
	if name == "" || len(name) > 64 || name[len(name)-1] == '_' || strings.Contains(name, "__") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// Sanitize returns name if it is [Valid], and otherwise a valid name made
// from it, the same for the same name: lower case, each run of characters
// other than a-z, 0-9 and '-' one '_', no '_' at either end, at most 64
// bytes ("server" if nothing is left). "Brave Search" becomes
// "brave_search", "github.com" "github_com" and "fs_" "fs". Two names may
// sanitize alike; [Unique] tells them apart.
func Sanitize(name string) string {
	if Valid(name) {
		return name
	}
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(name) {
		if r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	s := strings.Trim(b.String(), "_")
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "_")
	}
	if s == "" {
		return "server"
	}
	return s
}

// Unique returns the names of keys, in order: each key's [Sanitize]d form,
// with "_2", "_3", ... added when that name is already taken by a valid
// key or by an earlier key. Valid keys keep their names, so a valid name
// never changes because another key sanitizes to it.
func Unique(keys []string) []string {
	taken := map[string]bool{}
	for _, k := range keys {
		if Valid(k) {
			taken[k] = true
		}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		if Valid(k) {
			out[i] = k
			continue
		}
		base := Sanitize(k)
		name := base
		for n := 2; taken[name]; n++ {
			suffix := "_" + strconv.Itoa(n)
			name = strings.TrimRight(base[:min(len(base), 64-len(suffix))], "_") + suffix
		}
		taken[name] = true
		out[i] = name
	}
	return out
}
