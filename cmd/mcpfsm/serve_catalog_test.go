//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still forwarded, and tested.

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeCatalog: mcpfsm serve fronts the resources, templates and
// prompts of two -session fixture servers that share URIs, routes reads,
// prompts and subscriptions, gives the servers the client's roots, and
// keeps all of it working across a SIGKILL of one server.
func TestServeCatalog(t *testing.T) {
	dir := t.TempDir()
	fixLog, block := filepath.Join(dir, "fix.pids"), filepath.Join(dir, "fix.block")
	fix := `if [ -e "$1" ]; then exit 1; fi; exec "$2" -session -pidlog "$3"`
	path := writeConfig(t, obj{"mcpServers": obj{
		"fix": obj{"command": "sh", "args": []string{"-c", fix, "sh", block, fixture.Build(t), fixLog},
			"reconnect": obj{"initialDelayMs": 200, "maxDelayMs": 200, "maxAttempts": 500}},
		"other": obj{"command": fixture.Build(t), "args": []string{"-session"}},
	}})
	updated := make(chan string, 100)
	var resChanges atomic.Int32
	opts := &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resChanges.Add(1) },
	}
	// Roots are a server-to-client request: protocol 2025-11-25, as hosts speak it.
	sessOpts := &mcp.ClientSessionOptions{ProtocolVersion: conn.ClassicProtocolVersion}
	cmd, stderr, fc := serveStdioProcessWithRoots(t, nil, opts, sessOpts, []*mcp.Root{{URI: "file:///host"}},
		"serve", "-config", path, "-log-level", "debug")
	ctx := t.Context()

	res, err := fc.sess.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"mcpfsm:other/res://pid", "res://pid"}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	read := func(uri string) (string, error) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		r, err := fc.sess.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		return r.Contents[0].Text, nil
	}
	pid := fmt.Sprint(lastPID(t, fixLog))
	if got, err := read("res://pid"); err != nil || got != pid {
		t.Errorf("read res://pid = %q, %v; want fix's PID %s", got, err, pid)
	}
	if got, err := read("mcpfsm:other/res://echo/hi"); err != nil || got != "hi" {
		t.Errorf("read through other's template = %q, %v", got, err)
	}
	if p, err := fc.sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__fix__greet"}); err != nil ||
		p.Messages[0].Content.(*mcp.TextContent).Text != "hello from "+pid {
		t.Errorf("prompt mcp__fix__greet = %+v, %v", p, err)
	}

	// The client's roots reach the server that asks for them.
	stderr.waitFor(t, 0, "testserver: roots changed", "server=fix")
	if text, isErr := fc.call(t, "mcp__fix__roots", ""); isErr || text != "file:///host" {
		t.Errorf("roots seen by fix = %q (isError %v)", text, isErr)
	}
	if err := fc.sess.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://pid"}); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, 0, "testserver: subscribe res://pid", "server=fix")
	fc.call(t, "mcp__fix__touch", "")
	if got := conntest.Receive(t, updated, limit, "relayed resources/updated"); got != "res://pid" {
		t.Errorf("update relayed as %q", got)
	}

	// SIGKILL fix: its reads fail at once, naming its state.
	at := len(stderr.String())
	if err := os.WriteFile(block, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(lastPID(t, fixLog), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err = read("res://pid")
	outage := regexp.MustCompile(`server "fix": ((connection lost; reconnecting|connection failed; retrying) in [0-9.]+m?s|reconnecting now) \(attempt [0-9]+/500\); (resource "res://pid" was not read|the connection ended while resource "res://pid" was read)`)
	if err == nil || !outage.MatchString(err.Error()) {
		t.Errorf("read during the outage: %v; want an error naming the server, its state and the next attempt", err)
	}
	if got, err := read("mcpfsm:other/res://echo/up"); err != nil || got != "up" {
		t.Errorf("the other server's read during the outage = %q, %v", got, err)
	}
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, at, "reconnected and re-synced tools", "server=fix")

	// After recovery: the new process answers, has the roots and the
	// subscription, and nothing was announced as changed.
	pid2 := fmt.Sprint(lastPID(t, fixLog))
	if got, err := read("res://pid"); err != nil || got != pid2 || pid2 == pid {
		t.Errorf("read after recovery = %q, %v; want the new PID %s (old %s)", got, err, pid2, pid)
	}
	if text, isErr := fc.call(t, "mcp__fix__roots", ""); isErr || text != "file:///host" {
		t.Errorf("roots seen by the new fix = %q (isError %v)", text, isErr)
	}
	fc.call(t, "mcp__fix__touch", "")
	if got := conntest.Receive(t, updated, limit, "relayed resources/updated after the reconnect"); got != "res://pid" {
		t.Errorf("update relayed as %q", got)
	}
	if n := resChanges.Load(); n != 0 {
		t.Errorf("%d resources/list_changed: the reconnect listed the same resources", n)
	}

	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	allGone(t, fixLog)
}
