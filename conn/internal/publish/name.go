package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLen is the longest public name [PublicName] returns, the limit
// model APIs place on function names.
const MaxNameLen = 64

// hashLen is how many hex digits of the identity's hash a changed name
// ends in.
const hashLen = 12

// PublicName returns the name under which a server's tool or prompt is
// published: "mcp__<server>__<raw>", with every character outside
// [A-Za-z0-9_-] replaced by '_', at most [MaxNameLen] characters. When
// that normalisation or truncation changed anything, a '_' and the first
// 12 hex digits of SHA-256("<server>\x00<raw>") are appended. A name is
// also hashed when the server name contains "__" or ends in '_' (the split
// would be ambiguous) and when the raw name itself ends in '_' and 12 hex
// digits (it could pose as another entry's hashed name). So an unchanged
// name never looks hashed, and distinct (server, raw) identities share a
// public name only if their hashes collide.
//
// The result is a pure function of its inputs: a recovered server with an
// unchanged listing gets identical names.
func PublicName(server, raw string) string {
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
	if !changed && len(name) <= MaxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + raw))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	if keep := MaxNameLen - len(suffix); len(name) > keep {
		name = name[:keep]
	}
	return name + suffix
}

// Split splits a public name ([PublicName]) into the server's name and
// the rest: "mcp__fs__read" is "fs" and "read". A server name never holds
// "__", so the split is unambiguous; the rest is the raw name only when
// PublicName changed nothing. ok is false for a name of no such shape.
func Split(public string) (server, rest string, ok bool) {
	after, ok := strings.CutPrefix(public, "mcp__")
	if !ok {
		return "", "", false
	}
	server, rest, ok = strings.Cut(after, "__")
	if !ok || server == "" || rest == "" {
		return "", "", false
	}
	return server, rest, true
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
