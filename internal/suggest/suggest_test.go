package suggest_test

import (
	"testing"

	"github.com/mcpfsm/mcpfsm/internal/suggest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClosest(t *testing.T) {
	known := []string{"config", "timeout", "listen", "http"}
	for word, want := range map[string]string{"confg": "config", "CONFIG": "config", "tiemout": "timeout", "xyz": "", "htp": "http", "h": ""} {
		got, ok := suggest.Closest(word, known)
		if got != want || ok != (want != "") {
			t.Errorf("Closest(%q) = %q, %v; want %q", word, got, ok, want)
		}
	}
}
