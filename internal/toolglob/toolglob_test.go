package toolglob_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/toolglob"
)

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"read", "read", true},
		{"read", "read_file", false},
		{"*", "", true},
		{"*", "any/thing", true},
		{"read_*", "read_file", true},
		{"*_file", "read_files", false},
		{"a*b*c", "a-b-b-c", true},
		{"a*b*c", "a-c-b", false},
		{"ab*ba", "aba", false},
		{"delete_*", "delete_repository", true},
	} {
		if got := toolglob.Match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestCheckAndLiteral(t *testing.T) {
	for p, bad := range map[string]bool{"read_*": false, "x": false, "": true, "read?": true, "a b": true, "[ab]": true} {
		if got := toolglob.Check(p) != ""; got != bad {
			t.Errorf("Check(%q) refuses = %v, want %v", p, got, bad)
		}
	}
	if !toolglob.Literal("read_file") || toolglob.Literal("read_*") {
		t.Error("Literal: read_file is one name, read_* is a pattern")
	}
}
