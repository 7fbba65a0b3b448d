//go:build linux

package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// npmServers is the directory .ci/npm-servers.sh installs into, found as
// everythingServer finds it (or the test skips where node is absent).
func npmServers(t *testing.T) string {
	entry := everythingServer(t)
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(entry))))) // .../node_modules/@modelcontextprotocol/server-everything/dist/index.js
}

// TestNPMServersInASandbox runs the reference TypeScript servers unchanged
// inside sandboxes that allow reading only their own directory (and what
// node needs) and writing only what they serve: server-everything's
// tools answer, and server-filesystem reads and writes its directory but
// not the one its own arguments allow and the sandbox denies.
func TestNPMServersInASandbox(t *testing.T) {
	modules := npmServers(t)
	// Each subtest waits on its own deadline, which starts once the
	// fixture is built (newEnv builds it the first time): a build inside
	// the window, or a shared one, left the second subtest no time.
	fixture.Build(t)

	t.Run("everything", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		e := newEnv(t)
		tr := conn.Command("node", filepath.Join(modules, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio")
		tr.Launcher = &sandbox.Spec{AllowRead: []string{modules}, MemoryMB: 1024, MaxFiles: 1024}
		sup := e.start(conn.Config{Name: "everything", Transport: tr, Reconnect: fast(3)})
		if err := sup.Ready(ctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
		got, err := callText(ctx, e.reg, conn.PublicToolName("everything", "echo"), map[string]any{"message": "boxed"})
		if err != nil || !strings.Contains(got, "boxed") {
			t.Fatalf("echo: %q, %v", got, err)
		}
	})

	t.Run("filesystem", func(t *testing.T) {
		entry := filepath.Join(modules, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
		if _, err := os.Stat(entry); err != nil {
			t.Skipf("@modelcontextprotocol/server-filesystem is not installed in %s: run .ci/npm-servers.sh", modules)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		e := newEnv(t)
		work, secret := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(secret, "key"), []byte("secret"), 0o644)
		tr := conn.Command("node", entry, work, secret)
		tr.Launcher = &sandbox.Spec{AllowRead: []string{modules, work}, AllowWrite: []string{work}, DenyRead: []string{secret}}
		sup := e.start(conn.Config{Name: "fs", Transport: tr, Reconnect: fast(3)})
		if err := sup.Ready(ctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
		call := func(tool string, args map[string]any) (string, error) {
			return callText(ctx, e.reg, conn.PublicToolName("fs", tool), args)
		}
		note := filepath.Join(work, "note.txt")
		if got, err := call("write_file", map[string]any{"path": note, "content": "kept"}); err != nil {
			t.Fatalf("write_file: %q, %v", got, err)
		}
		if got, err := call("read_text_file", map[string]any{"path": note}); err != nil || got != "kept" {
			t.Errorf("read_text_file: %q, %v", got, err)
		}
		if got, err := call("read_text_file", map[string]any{"path": filepath.Join(secret, "key")}); err == nil || strings.Contains(got, "secret") {
			t.Errorf("read_text_file of a denied file: %q, %v", got, err)
		} else if !strings.Contains(err.Error(), "EACCES") && !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("read_text_file of a denied file: %v; want the sandbox's EACCES", err)
		}
		if b, err := os.ReadFile(filepath.Join(secret, "key")); err != nil || string(b) != "secret" {
			t.Errorf("the host cannot read the denied file: %q, %v", b, err)
		}
	})
}
