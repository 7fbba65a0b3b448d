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
// under in mode n. With raw names the first server (by name) that lists
// a name gets it; a later server's entry keeps its public name, and
// shared is told of it with the server that has the name.
func (n Names) servedNames(entries []named, shared func(e named, owner string)) map[string]string {
	out := make(map[string]string, len(entries))
	if n != NamesRaw {
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
			shared(e, first)
		default:
			owner[e.raw] = e.server
			out[e.public] = e.raw
		}
	}
	return out
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
