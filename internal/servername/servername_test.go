package servername_test

import (
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
