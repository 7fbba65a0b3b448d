package config

import (
	"maps"
	"slices"
	"testing"
)

// Each dialect reads every key it documents (and suggests), and
// documents every key it reads but the hosts' other spellings; no key is
// both read and ignored or respelt.
func TestDialectTables(t *testing.T) {
	for name, tc := range map[string]struct {
		d     *dialect
		other []string // read, but not suggested
	}{
		"host":   {&hostDialect, []string{"disabledTools", "timeout", "trust", "tcp", "transportType", "oauth", "auth", "upstreamAuth"}},
		"gemini": {&geminiDialect, []string{"disabledTools", "timeout", "trust", "tcp", "transportType", "oauth", "auth", "upstreamAuth"}},
		"codex":  {&codexDialect, []string{"bearer_token"}},
	} {
		read := slices.Sorted(maps.Keys(tc.d.fields))
		want := slices.Sorted(slices.Values(append(slices.Clone(tc.d.keys), tc.other...)))
		if !slices.Equal(read, want) {
			t.Errorf("%s: reads %q, documents %q and %q", name, read, tc.d.keys, tc.other)
		}
		for k := range tc.d.fields {
			if _, ok := tc.d.ignored[k]; ok {
				t.Errorf("%s: %s is both read and ignored", name, k)
			}
			if _, ok := tc.d.spelling[k]; ok {
				t.Errorf("%s: %s is both read and respelt", name, k)
			}
		}
	}
}
