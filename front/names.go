package front

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Names says what the front calls the servers' tools and prompts.
type Names string

const (
	// NamesPrefixed serves every tool and prompt as mcp__<server>__<name>
	// (the default): names never collide, and say whose they are.
	NamesPrefixed Names = "prefixed"
	// NamesRaw serves tools and prompts under the servers' own names, as
	// a client connected to the server directly sees them. A name that
	// two servers share is the first server's (in name order); the later
	// servers' keep the prefixed form, and the front logs it once.
	NamesRaw Names = "raw"
)

// ParseNames parses the -names flag: "prefixed", "raw", or "" for the
// default.
func ParseNames(s string) (Names, error) {
	switch n := Names(s); n {
	case "", NamesPrefixed:
		return NamesPrefixed, nil
	case NamesRaw:
		return n, nil
	}
	return "", fmt.Errorf("names %q: %w", s, errNamesValue)
}

var errNamesValue = errors.New("want prefixed (mcp__<server>__<tool>) or raw (the servers' own names)")

// named is one tool or prompt to serve: its server, its own name and
// its public (prefixed) name.
type named struct{ server, raw, public string }

// servedNames maps each entry's public name to the name it is served
// under. With raw names the first server (by name) that lists a name
// gets it; a later server's entry keeps its public name, and taken
// reports it (kind, server and name) so that the caller warns once.
func (f *Front) servedNames(kind string, entries []named) map[string]string {
	out := make(map[string]string, len(entries))
	if f.opts.Names != NamesRaw {
		for _, e := range entries {
			out[e.public] = e.public
		}
		return out
	}
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b named) int { return strings.Compare(a.server, b.server) })
	publics := map[string]bool{}
	for _, e := range entries {
		publics[e.public] = true
	}
	owner := map[string]string{} // raw name -> server that has it
	for _, e := range sorted {
		first, taken := owner[e.raw]
		switch {
		case e.raw == "" || publics[e.raw] && e.raw != e.public:
			// A raw name that reads as another entry's public name would
			// shadow it.
			out[e.public] = e.public
		case taken && first != e.server:
			out[e.public] = e.public
			f.warnShared(kind, e, first)
		default:
			owner[e.raw] = e.server
			out[e.public] = e.raw
		}
	}
	return out
}

// warnShared logs, once per entry, that e's own name is another server's.
func (f *Front) warnShared(kind string, e named, owner string) {
	key := kind + " shared\x00" + e.server + "\x00" + e.raw
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.warned[key] {
		return
	}
	f.warned[key] = true
	f.opts.Logger.Warn(kind+" served under its prefixed name: an earlier server (by name) has its own name (-names raw)",
		"server", e.server, "name", e.raw, "served_as", e.public, "owner", owner)
}

// String returns the mode's flag value.
func (n *Names) String() string {
	if n == nil || *n == "" {
		return string(NamesPrefixed)
	}
	return string(*n)
}

// Set parses a flag value, as [ParseNames]: a *Names is a flag.Value.
func (n *Names) Set(s string) error {
	v, err := ParseNames(s)
	if err != nil {
		return errNamesValue // the flag package names the flag and the value
	}
	*n = v
	return nil
}
