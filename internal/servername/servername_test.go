package servername_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/servername"
)

func TestValid(t *testing.T) {
	for name, want := range map[string]bool{
		"fs": true, "my-server_2": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "a__b": false, "a_": false, "a.b": false, "a b": false, "é": false,
	} {
		if got := servername.Valid(name); got != want {
			t.Errorf("Valid(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSanitize(t *testing.T) {
	for name, want := range map[string]string{
		"fs": "fs", "My-Server": "My-Server", "Brave Search": "brave_search", "github.com": "github_com",
		"fs_": "fs", "a__b": "a_b", "  x  ": "x", "日本": "server", "": "server",
		strings.Repeat("é", 40): "server", strings.Repeat("a b ", 30): strings.TrimRight(strings.Repeat("a_b_", 16), "_"),
	} {
		got := servername.Sanitize(name)
		if got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", name, got, want)
		}
		if !servername.Valid(got) {
			t.Errorf("Sanitize(%q) = %q is not valid", name, got)
		}
	}
}

func TestUnique(t *testing.T) {
	keys := []string{"Brave Search", "brave_search", "Brave.Search", "github.com", "fs_", "fs", strings.Repeat("x", 63) + "!"}
	got := servername.Unique(keys)
	want := []string{"brave_search_2", "brave_search", "brave_search_3", "github_com", "fs_2", "fs", strings.Repeat("x", 63)}
	if !slices.Equal(got, want) {
		t.Errorf("Unique(%q) =\n%q, want\n%q", keys, got, want)
	}
	long := servername.Unique([]string{strings.Repeat("y", 64), strings.Repeat("y", 64) + "!"})
	if long[1] != strings.Repeat("y", 62)+"_2" {
		t.Errorf("a long collision got %q", long[1])
	}
}
