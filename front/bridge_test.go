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
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := bridgeSpec().Mermaid(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/design.md does not show the bridged-request machine as it is; put this diagram in its front section:\n```mermaid\n%s```", want)
	}
}
