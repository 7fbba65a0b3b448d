package conn

import "github.com/mcpfsm/mcpfsm/conn/internal/publish"

// MaxToolNameLen is the longest public tool name [PublicToolName] returns,
// the limit model APIs place on function names.
const MaxToolNameLen = 64

// The limit is spelled out above for the reader of conn's documentation;
// this fails to compile if it ever parts from the one publish applies.
const _ = uint(MaxToolNameLen-publish.MaxNameLen) + uint(publish.MaxNameLen-MaxToolNameLen)

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
func PublicToolName(server, raw string) string { return publish.PublicName(server, raw) }

// SplitToolName splits a public tool name ([PublicToolName]) into the
// server's name and the rest, the tool's part: "mcp__fs__read" is "fs" and
// "read". A server name never holds "__", so the split is unambiguous; the
// tool's part is the raw name only when PublicToolName changed nothing (it
// may be normalised, truncated and hashed). ok is false for a name of no
// such shape.
func SplitToolName(public string) (server, tool string, ok bool) { return publish.Split(public) }
