package config

import (
	"os/exec"
	"strings"
	"testing"
)

// Package config parses file formats: it knows no connection, so a
// program that only reads a host's file builds without conn, the MCP SDK
// or OAuth.
func TestConfigKnowsNoConnection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/mcpfsm/mcpfsm/conn", "github.com/modelcontextprotocol/go-sdk", "golang.org/x/oauth2", "github.com/google/jsonschema-go"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("config depends on %s", dep)
			}
		}
	}
}
