package config

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzStripJSONC checks the JSONC reduction: every byte keeps its offset
// and every line break stays, valid JSON passes unchanged, and what comes
// out never panics the parser.
func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, "{ // c\n \"a\": [1, 2,], /* x */ }", `{"s": "// not /* a */ comment", }`,
		`{"e": "\"//\\"}`, "[1,,]", "/* open", `{"a": "\u00e9"}`, "\ufeff{}", `{,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := stripJSONC(in)
		if err != nil {
			return
		}
		if len(out) != len(in) {
			t.Fatalf("length %d became %d", len(in), len(out))
		}
		for i := range in {
			if (in[i] == '\n') != (out[i] == '\n') {
				t.Fatalf("line break moved at offset %d", i)
			}
		}
		if json.Valid(in) && !bytes.HasPrefix(in, []byte("\ufeff")) && !bytes.Equal(in, out) {
			t.Fatalf("valid JSON changed:\n%q\n%q", in, out)
		}
		_, _ = Parse(in, &Options{LookupEnv: noEnv})
	})
}
