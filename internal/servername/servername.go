// Package servername is the one rule for a supervised server's name
// (conn.Config.Name, a config file's server key): the name becomes part of
// every public tool name, mcp__<server>__<tool>, and must split from it
// unambiguously.
package servername

import "strings"

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
