package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/config"
)

func TestServingItselfIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	other := filepath.Join(dir, "other.json")
	body := `{"mcpServers": {
		"self": {"command": "mcpfsm", "args": ["serve", "-config", "` + path + `"]},
		"rel": {"command": "/usr/local/bin/mcpfsm", "args": ["serve", "-config=servers.json"], "cwd": "` + dir + `"},
		"nested": {"command": "mcpfsm", "args": ["serve", "-config", "` + other + `"]},
		"fs": {"command": "mcpfsm", "args": ["demo"]}
	}}`
	for _, p := range []string{path, other} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := cfg.CheckNotServing(path)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one each for self and rel", errs)
	}
	for _, err := range errs {
		if !errors.Is(err, config.ErrServesItself) {
			t.Errorf("%v does not match ErrServesItself", err)
		}
	}
	if got := errs[0].Error() + errs[1].Error(); !strings.Contains(got, "server rel") || !strings.Contains(got, "server self") {
		t.Errorf("errors %q do not name both servers", got)
	}
}
