package config

import "testing"

func TestMatchTool(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"read", "read", true},
		{"read", "read_file", false},
		{"read", "Read", false},
		{"*", "", true},
		{"*", "any/thing", true},
		{"read_*", "read_file", true},
		{"read_*", "read_", true},
		{"read_*", "rea", false},
		{"*_file", "read_file", true},
		{"*_file", "read_files", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "a-b-b-c", true},
		{"a*b*c", "a-c-b", false},
		{"a*b*c", "acb", false},
		{"a*bc", "abcbc", true},
		{"*a*", "bab", true},
		{"**", "x", true},
		{"git/*", "git/log", true},
		{"ab*ba", "aba", false}, // the prefix and the suffix must not overlap
	} {
		if got := matchTool(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchTool(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestToolAllowed: no include list means every tool, an include list
// only its tools, and an exclude list wins over both.
func TestToolAllowed(t *testing.T) {
	tests := []struct {
		name    string
		s       Server
		allowed []string
		denied  []string
	}{
		{"no filters", Server{}, []string{"a", "read_file", ""}, nil},
		{"include", Server{IncludeTools: []string{"read_*", "list"}}, []string{"read_file", "list"}, []string{"write_file", "list_all"}},
		{"exclude", Server{ExcludeTools: []string{"delete_*"}}, []string{"read", "delete"}, []string{"delete_file"}},
		{"exclude wins", Server{IncludeTools: []string{"*"}, ExcludeTools: []string{"write_file", "rm"}},
			[]string{"read_file", "rmdir"}, []string{"write_file", "rm"}},
		{"exclude all", Server{IncludeTools: []string{"a"}, ExcludeTools: []string{"*"}}, nil, []string{"a", "b"}},
	}
	for _, tt := range tests {
		for _, tool := range tt.allowed {
			if !tt.s.ToolAllowed(tool) {
				t.Errorf("%s: ToolAllowed(%q) = false, want true", tt.name, tool)
			}
		}
		for _, tool := range tt.denied {
			if tt.s.ToolAllowed(tool) {
				t.Errorf("%s: ToolAllowed(%q) = true, want false", tt.name, tool)
			}
		}
	}
}
