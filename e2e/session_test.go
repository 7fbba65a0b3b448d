//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still served, and tested.

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lines is a Stdio.Stderr writer that delivers every line with a prefix.
type lines struct {
	prefix string
	mu     sync.Mutex
	buf    []byte
	ch     chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		if strings.HasPrefix(line, l.prefix) {
			select {
			case l.ch <- line:
			default:
			}
		}
	}
}

// The whole session survives a SIGKILL of a real stdio server: the
// elicitation and resource-update handlers are called again, the roots and
// the subscription are re-sent, and the catalog reads from the new process.
func TestSessionSurvivesSIGKILL(t *testing.T) {
	e := newEnv(t)
	events := &lines{prefix: "testserver: ", ch: make(chan string, 100)}
	cmd := e.command("-session")
	cmd.Stderr = io.MultiWriter(e.starts, events)
	updates := make(chan string, 10)
	cat := conn.NewCatalog()
	sup := e.start(conn.Config{
		// Server-to-client requests during a call (elicitation, roots) are
		// features of the classic protocol.
		ProtocolVersion: conn.ClassicProtocolVersion,
		Transport:       cmd,
		Reconnect:       fast(5),
		Roots:           []*mcp.Root{{URI: "file:///a"}},
		Catalog:         cat,
		Client: &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "host"}}, nil
			},
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				updates <- req.Params.URI
			},
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := sup.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	awaitLine := func(want string) {
		t.Helper()
		for {
			select {
			case l := <-events.ch:
				if l == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no stderr line %q: %v", want, ctx.Err())
			}
		}
	}
	if err := sup.Subscribe(ctx, "res://pid"); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	awaitLine("testserver: subscribe res://pid")
	pid := e.starts.await(t, wait)
	check := func(pid int, roots string) {
		t.Helper()
		if got, err := e.call("ask", map[string]any{}); err != nil || got != "accept host" {
			t.Errorf("ask: %q, %v; want the elicitation handler's answer", got, err)
		}
		if got, err := e.call("roots", map[string]any{}); err != nil || got != roots {
			t.Errorf("roots: %q, %v; want %q", got, err, roots)
		}
		var view []string
		for _, r := range cat.Resources() {
			view = append(view, r.Raw.URI)
		}
		for _, r := range cat.ResourceTemplates() {
			view = append(view, r.Raw.URITemplate)
		}
		for _, p := range cat.Prompts() {
			view = append(view, p.Name)
		}
		if got, want := strings.Join(view, " "), "res://pid res://echo/{x} mcp__fx__greet"; got != want {
			t.Errorf("catalog %q, want %q", got, want)
		}
		res, err := cat.ReadResource(ctx, "fx", "res://pid")
		if err != nil || res.Contents[0].Text != fmt.Sprint(pid) {
			t.Errorf("read res://pid: %v, %v; want the live process's PID %d", res, err, pid)
		}
		pr, err := cat.GetPrompt(ctx, "mcp__fx__greet", nil)
		if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != fmt.Sprint("hello from ", pid) {
			t.Errorf("get prompt: %v, %v", pr, err)
		}
		if _, err := e.call("touch", map[string]any{}); err != nil {
			t.Errorf("touch: %v", err)
		}
		select {
		case uri := <-updates:
			if uri != "res://pid" {
				t.Errorf("update for %q, want res://pid", uri)
			}
		case <-ctx.Done():
			t.Errorf("no resource update: %v", ctx.Err())
		}
	}
	check(pid, "file:///a")
	if err := sup.SetRoots(&mcp.Root{URI: "file:///b"}); err != nil {
		t.Fatal(err)
	}
	awaitLine("testserver: roots changed")

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	e.rec.Await(t, wait, conn.LostReconnecting)
	e.rec.Await(t, wait, conn.Established)
	next := e.starts.await(t, wait)
	awaitLine("testserver: subscribe res://pid")
	check(next, "file:///b")
}
