package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/host"
)

// A Go host runs a whole mcpServers file, supervised, and applies the
// file again whenever it changes.
func Example() {
	path := filepath.Join(os.TempDir(), "mcpfsm-example.json")
	_ = os.WriteFile(path, []byte(`{"mcpServers": {"broken": {"command": "no-such-mcp-server"}}}`), 0o600)
	defer os.Remove(path)

	cfg, err := config.Load(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := host.New(host.Options{Path: path})
	_ = h.Start(context.Background(), cfg) // waits for the first attempts
	defer h.Close(context.Background())

	// Hot reload: every save of the file is applied, by name.
	w, err := h.Watch(host.WatchOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- w.Run(ctx) }()
	defer func() { stop(); <-watched }()

	// ... serve h.Registry()'s tools; h.Status() reports each server.
	for _, s := range h.Status() {
		fmt.Println(s.Config.Name, "came up:", s.Err == nil)
	}
	// Output: broken came up: false
}
