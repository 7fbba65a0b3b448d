package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	everythingOnce sync.Once
	everythingBin  string
	everythingErr  error
	everythingOut  []byte
)

// everything builds go-sdk's conformance server (the MCP conformance
// suite's scenario server) once, from the module cache.
func everything(t *testing.T) string {
	t.Helper()
	host := fixture.BuildHost(t)
	everythingOnce.Do(func() {
		everythingBin = filepath.Join(filepath.Dir(host), "everything-server")
		cmd := exec.Command("go", "build", "-o", everythingBin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
		everythingOut, everythingErr = cmd.CombinedOutput()
	})
	if everythingErr != nil {
		t.Fatalf("build everything-server: %v\n%s", everythingErr, everythingOut)
	}
	return everythingBin
}

// serveConfig writes a config whose one server, "everything", is the
// conformance server over stdio.
func serveConfig(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"everything": {"command": %q}}}`, everything(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serveHTTP starts serve -listen on a free port and returns its URL.
func serveHTTP(t *testing.T, cfg string) string {
	t.Helper()
	_, url, _ := serveListening(t, cfg)
	return url
}

// serveListening starts serve -names raw -listen on a free port and
// returns it, its URL and the later lines of its stderr (a line nobody
// reads in time is dropped, never blocking serve). It is killed at the
// end of the test.
func serveListening(t *testing.T, cfg string) (*exec.Cmd, string, <-chan string) {
	t.Helper()
	out := serveOutput(t, "serve")
	cmd := exec.Command(fixture.BuildHost(t), "serve", "-config", cfg, "-names", "raw", "-listen", "127.0.0.1:0", "-unauthenticated")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = out.Write([]byte(sc.Text() + "\n"))
			if _, rest, ok := strings.Cut(sc.Text(), "serving MCP over Streamable HTTP at "); ok {
				found <- strings.Trim(strings.Fields(rest)[0], `"`)
				continue
			}
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case url := <-found:
		return cmd, url, lines
	case <-time.After(30 * time.Second):
		t.Fatal("serve -listen did not start serving within 30s")
	}
	return nil, "", nil
}

// eraClient is a go-sdk client of serve that accepts every elicitation
// with a username and records the progress it is sent.
type eraClient struct {
	sess     *mcp.ClientSession
	progress chan string
}

func connectServe(t *testing.T, front, cfg, url, protocol string) *eraClient {
	t.Helper()
	c := &eraClient{progress: make(chan string, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "era-test"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.progress <- fmt.Sprintf("%v %v/%v", req.Params.ProgressToken, req.Params.Progress, req.Params.Total)
		},
	})
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: url}
	if front == "stdio" {
		cmd := exec.Command(fixture.BuildHost(t), "serve", "-config", cfg, "-names", "raw")
		cmd.Stderr = serveOutput(t, "serve")
		tr = &mcp.CommandTransport{Command: cmd}
	}
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, tr, opts)
	if err != nil {
		t.Fatalf("connect to serve over %s: %v", front, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	c.sess = sess
	return c
}

func (c *eraClient) call(t *testing.T, tool string, args any, meta mcp.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("call %s: tool error %q", tool, b.String())
	}
	return b.String()
}

// TestServeOnBothErasAndBothFronts: a go-sdk v1.8.0 client with default
// options negotiates 2026-07-28 with mcpfsm serve over stdio and over
// Streamable HTTP, and one that asks for 2025-11-25 gets it; on each, the
// backend's elicitation during a call reaches the client's handler and
// its answer the backend (for the modern client as an input request of
// the call's result), and the backend's progress reaches the client
// under the client's own token. The backend (the conformance suite's
// go-sdk server) speaks 2026-07-28 to serve and asks in the call's result
// (input_required), which serve's bridges turn into the client's era.
func TestServeOnBothErasAndBothFronts(t *testing.T) {
	cfg := serveConfig(t)
	url := serveHTTP(t, cfg)
	for _, front := range []string{"stdio", "http"} {
		for _, protocol := range []string{"", conn.ClassicProtocolVersion} {
			want := protocol
			if want == "" {
				want = conn.DefaultProtocolVersion
			}
			t.Run(front+"/"+want, func(t *testing.T) {
				c := connectServe(t, front, cfg, url, protocol)
				if got := c.sess.InitializeResult().ProtocolVersion; got != want {
					t.Fatalf("negotiated %q, want %q", got, want)
				}
				got := c.call(t, "test_input_required_result_elicitation", map[string]any{}, nil)
				if wantText := "Hello, ada!"; got != wantText {
					t.Errorf("test_input_required_result_elicitation = %q, want %q", got, wantText)
				}
				if got := c.call(t, "test_tool_with_progress", map[string]any{}, mcp.Meta{"progressToken": "p1"}); strings.Contains(got, "p1") {
					t.Errorf("the backend saw the client's own progress token: %q", got)
				}
				var steps []string
				for range 3 {
					select {
					case s := <-c.progress:
						steps = append(steps, s)
					case <-time.After(30 * time.Second):
						t.Fatalf("progress so far %q; no more within 30s", steps)
					}
				}
				if diff := cmp.Diff([]string{"p1 0/100", "p1 50/100", "p1 100/100"}, steps); diff != "" {
					t.Errorf("progress (-want +got):\n%s", diff)
				}
			})
		}
	}
}
