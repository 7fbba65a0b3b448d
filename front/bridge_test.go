package front

import (
	"os"
	"strings"
	"testing"
)

// The bridged-request machine compiles, and docs/design.md shows its
// current diagram.
func TestBridgeSpecAndItsDiagram(t *testing.T) {
	if err := bridgeSpec().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := bridgeMachines().New(bridgeOptions()); err != nil {
		t.Fatal(err)
	}
	checkDocShows(t, "bridged-request", bridgeSpec().Mermaid())
}

// checkDocShows fails unless docs/design.md shows the Mermaid diagram
// want of the machine named.
func checkDocShows(t *testing.T, machine, want string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/design.md does not show the %s machine as it is; put this diagram in its front section:\n```mermaid\n%s```", machine, want)
	}
}
