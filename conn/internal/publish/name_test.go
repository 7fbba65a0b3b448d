package publish

import (
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// A raw name ends like a hashed one only with '_' and exactly twelve
// lower-case hex digits; PublicName hashes exactly those, so a crafted
// raw name cannot pose as another tool's hashed name.
func TestLooksHashed(t *testing.T) {
	for raw, want := range map[string]bool{
		"read":              false,
		"x_0123456789ab":    true,
		"_0123456789ab":     true,
		"0123456789ab":      false, // no '_'
		"x_0123456789aB":    false, // upper case is not what a hash prints
		"x_0123456789a":     false, // eleven digits
		"x-0123456789ab":    false,
		"x_0123456789abc":   false, // the '_' is not twelve from the end
		"tool_deadbeefcafe": true,
		"tool_deadbeefcafg": false,
	} {
		if got := looksHashed(raw); got != want {
			t.Errorf("looksHashed(%q) = %v, want %v", raw, got, want)
		}
		public := PublicName("s", raw)
		if hashed := public != "mcp__s__"+raw; hashed != (want || !validName.MatchString("mcp__s__"+raw)) {
			t.Errorf("PublicName(%q, %q) = %q: hashed %v, looks hashed %v", "s", raw, public, hashed, want)
		}
	}
}

// A name too long is cut to MaxNameLen with its hash kept whole at the
// end; Split still finds its server.
func TestPublicNameLong(t *testing.T) {
	raw := strings.Repeat("r", 100)
	got := PublicName("srv", raw)
	if len(got) != MaxNameLen || !validName.MatchString(got) {
		t.Fatalf("PublicName of a long raw name = %q (%d characters), want %d valid ones", got, len(got), MaxNameLen)
	}
	if !looksHashed(got) {
		t.Errorf("%q does not end in a hash", got)
	}
	server, rest, ok := Split(got)
	if !ok || server != "srv" || strings.Trim(rest[:len(rest)-hashLen-1], "r") != "" {
		t.Errorf("Split(%q) = %q, %q, %v; want server \"srv\" and r's before the hash", got, server, rest, ok)
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ public, server, rest string }{
		{"mcp__fs__read", "fs", "read"},
		{"mcp__fs__a__b", "fs", "a__b"},
		{"mcp__git-hub__x_y", "git-hub", "x_y"},
	} {
		server, rest, ok := Split(tc.public)
		if !ok || server != tc.server || rest != tc.rest {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", tc.public, server, rest, ok, tc.server, tc.rest)
		}
	}
	for _, bad := range []string{"", "read", "mcp__", "mcp__fs", "mcp____x", "mcp__fs__", "other__fs__read"} {
		if s, rest, ok := Split(bad); ok {
			t.Errorf("Split(%q) = %q, %q, true; want false", bad, s, rest)
		}
	}
}
