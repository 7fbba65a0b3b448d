package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// The console's view of a host: every server with a supervisor, a
// sandboxed one saying what its sandbox allows (the effective lists, what
// the sandbox adds marked) and an unsandboxed one nothing; a host without
// a file cannot reload, as the console's 501 says.
func TestConsoleHostShowsServersAndTheirSandboxes(t *testing.T) {
	bin := fixture.Build(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	os.Mkdir(filepath.Join(state, "mcpfsm"), 0o700) // denied when it exists
	cfg, err := config.Parse([]byte(fmt.Sprintf(`{"servers": {
		"boxed": {"command": %q, "sandboxEnabled": true, "sandbox": {"filesystem": {"denyRead": ["/root/.ssh"]}}},
		"free": {"command": %q}}}`, bin, bin)), nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := host.New(host.Options{})
	if err := hs.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer hs.Close(context.Background())
	if f := hs.Failures(); len(f) != 0 {
		t.Fatalf("failures: %+v", f)
	}
	ch := consoleHost{hs: hs}
	got := map[string][]string{}
	for _, s := range ch.Servers() {
		got[s.Status().Server] = s.(console.Sandboxed).Sandbox()
	}
	want := map[string][]string{"boxed": {"read: everything; not /root/.ssh, " + state + "/mcpfsm (mcpfsm's state)", "write: nowhere", "network: none; no Unix sockets"}, "free": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sandboxes (-want +got):\n%s", diff)
	}
	if err := ch.Reload(context.Background()); !errors.Is(err, console.ErrReloadUnsupported) || !errors.Is(err, host.ErrNoPath) {
		t.Errorf("Reload without a file = %v, want ErrReloadUnsupported and ErrNoPath", err)
	}
}
