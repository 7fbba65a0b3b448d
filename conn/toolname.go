package conn

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest public tool name [PublicToolName] returns,
// the limit model APIs place on function names.
const MaxToolNameLen = 64

const hashLen = 12

// PublicToolName returns the name under which a server's tool is published:
// "mcp__<server>__<raw>", with every character outside [A-Za-z0-9_-]
// replaced by '_', at most [MaxToolNameLen] characters. When that
// normalisation or truncation changed anything, a '_' and the first 12 hex
// digits of SHA-256("<server>\x00<raw>") are appended. A name is also
// hashed when the server name contains "__" or ends in '_' (the split would
// be ambiguous) and when the raw name itself ends in '_' and 12 hex digits
// (it could pose as another tool's hashed name). So an unchanged name never
// looks hashed, and two hashed names are equal only if their identities'
// hashes collide: distinct (server, raw) identities do not share a public
// name. The raw name alone is what goes on the wire.
//
// The result is a pure function of its inputs: a recovered server with an
// unchanged tool list gets identical names.
func PublicToolName(server, raw string) string {
	want := "mcp__" + server + "__" + raw
	var b strings.Builder
	b.Grow(len(want))
	changed := strings.Contains(server, "__") || strings.HasSuffix(server, "_") || looksHashed(raw)
	for i := 0; i < len(want); i++ {
		c := want[i]
		if c == '_' || c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		changed = true
	}
	name := b.String()
	if !changed && len(name) <= MaxToolNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + raw))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	if keep := MaxToolNameLen - len(suffix); len(name) > keep {
		name = name[:keep]
	}
	return name + suffix
}

// SplitToolName splits a public tool name ([PublicToolName]) into the
// server's name and the rest, the tool's part: "mcp__fs__read" is "fs" and
// "read". A server name never holds "__", so the split is unambiguous; the
// tool's part is the raw name only when PublicToolName changed nothing (it
// may be normalised, truncated and hashed). ok is false for a name of no
// such shape.
func SplitToolName(public string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(public, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// looksHashed reports whether raw ends like a hashed public name.
func looksHashed(raw string) bool {
	if len(raw) < hashLen+1 || raw[len(raw)-hashLen-1] != '_' {
		return false
	}
	for _, c := range raw[len(raw)-hashLen:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
