//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and tested.

package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// filesystemServer returns the entry point of the installed
// @modelcontextprotocol/server-filesystem, or skips.
func filesystemServer(t *testing.T) string {
	t.Helper()
	entry := filepath.Join(filepath.Dir(filepath.Dir(everythingServer(t))), "..", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Skipf("@modelcontextprotocol/server-filesystem is not installed beside server-everything: run .ci/npm-servers.sh")
	}
	return entry
}

// isolated is serve -listen behind an OAuth issuer of the test's, so that
// each client is a subject of its own on either era.
type isolated struct {
	cmd    *exec.Cmd
	url    string
	issuer *fixture.Issuer
	pids   string // the backends' PIDs, one line per process started
	dir    string
	log    *lineLog // serve's
}

const isolatedResource = "http://127.0.0.1/mcp"

// serveIsolated writes a config whose one server, "fs", runs command
// (recording each process's PID), with the server's extra keys, and
// starts serve -listen with OAuth and extra flags.
func serveIsolated(t *testing.T, command []string, keys map[string]any, flags ...string) *isolated {
	t.Helper()
	is := &isolated{issuer: fixture.NewIssuer(t), dir: t.TempDir()}
	is.pids = filepath.Join(is.dir, "pids")
	script := fmt.Sprintf("echo $$ >> %q; exec \"$@\"", is.pids)
	server := map[string]any{"command": "sh", "args": append([]string{"-c", script, "sh"}, command...)}
	for k, v := range keys {
		server[k] = v
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"fs": server}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(is.dir, "servers.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "-config", cfg, "-names", "raw", "-listen", "127.0.0.1:0",
		"-oauth-issuer", is.issuer.URL, "-oauth-resource", isolatedResource}, flags...)
	is.cmd, is.url, is.log = startServeLog(t, args...)
	return is
}

// startServe starts mcpfsm with args, which serve Streamable HTTP, and
// returns it and its URL; it is stopped (SIGTERM, then killed) at the end
// of the test, and every backend process it started is gone by then.
// Its log is printed if the test fails (serveOutput).
func startServe(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, url, _ := startServeLog(t, args...)
	return cmd, url
}

// startServeLog is startServe, and serve's log, to wait on.
func startServeLog(t *testing.T, args ...string) (*exec.Cmd, string, *lineLog) {
	t.Helper()
	log := serveOutput(t, "serve")
	cmd := exec.Command(fixture.BuildHost(t), args...)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	const serving = "serving MCP over Streamable HTTP at "
	at := log.awaitNWithin(t, 30*time.Second, 0, 1, "serve's URL", contains(serving))
	_, rest, _ := strings.Cut(log.lines(at - 1)[0], serving)
	return cmd, strings.Trim(strings.Fields(rest)[0], `"`), log
}

// awaitShared waits until the shared instance of fs is established: serve
// starts serving after a bounded wait for its servers (on a loaded
// machine node may take longer to start), and a client's first call to a
// tool not listed yet is refused as unknown.
func (is *isolated) awaitShared(t *testing.T) {
	t.Helper()
	is.log.awaitN(t, 0, 1, "the shared instance of fs established", func(l string) bool {
		return contains(" server=fs state=established ")(l) && !strings.Contains(l, "instance=per-client") && !strings.Contains(l, " era=")
	})
}

// started returns the PIDs of the backend processes started so far.
func (is *isolated) started(t *testing.T) []int { return fixture.PIDs(t, is.pids) }

// awaitStarted waits until n backend processes have started.
func (is *isolated) awaitStarted(t *testing.T, n int) []int {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if pids := is.started(t); len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backend processes started within %v, want %d", len(is.started(t)), wait, n)
		}
		time.Sleep(10 * time.Millisecond) // a process's start, seen from outside it
	}
}

// awaitGone waits until the process pid has ended.
func awaitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for fixture.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs %v on", what, pid, wait)
		}
		time.Sleep(10 * time.Millisecond) // a process's end, seen from outside it
	}
}

// client connects to serve as subject, on protocol ("" for the SDK's
// default, 2026-07-28), offering roots, answering elicitations with its
// subject as username and name.
func (is *isolated) client(t *testing.T, subject, protocol string, roots ...string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: subject}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": subject, "name": subject}}, nil
		},
	})
	for _, r := range roots {
		c.AddRoots(&mcp.Root{URI: "file://" + r})
	}
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: is.url,
		HTTPClient: fixture.Bearer(is.issuer.Token(t, isolatedResource, subject, "mcp"))}, opts)
	if err != nil {
		t.Fatalf("%s connects: %v", subject, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// tool calls name with args and returns its text and whether it is an
// error result.
func tool(t *testing.T, sess *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}

// fsTree makes dir/<name>/<name>.txt holding name for each name.
func fsTree(t *testing.T, dir string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		d := filepath.Join(dir, n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, n+".txt"), []byte("the file of "+n), 0o644); err != nil {
			t.Fatal(err)
		}
		resolved, err := filepath.EvalSymlinks(d)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = resolved
	}
	return out
}

// Two clients with different roots in front of server-filesystem, on
// either era: each sees only its own root, reads its own file and
// cannot read the other's.
func TestFilesystemClientsSeeOnlyTheirOwnRoots(t *testing.T) {
	entry := filesystemServer(t)
	for _, protocol := range []string{conn.ClassicProtocolVersion, ""} {
		era := protocol
		if era == "" {
			era = conn.DefaultProtocolVersion
		}
		t.Run(era, func(t *testing.T) {
			is := serveIsolated(t, []string{"node", entry}, nil, "-log-level", "debug")
			is.awaitShared(t)
			dirs := fsTree(t, is.dir, "b", "c")
			alice := is.client(t, "alice", protocol, dirs["b"])
			bob := is.client(t, "bob", protocol, dirs["c"])
			applied := 0 // serve's log up to the last instance's "roots applied"
			for _, c := range []struct {
				sess       *mcp.ClientSession
				own, else_ string
			}{{alice, "b", "c"}, {bob, "c", "b"}} {
				// The first call starts the client's instance, which has
				// the client's roots from its start (a 2026-07-28
				// client's asked in this call first). server-filesystem
				// applies them after it was answered, off its reader (it
				// checks each directory), and says so on its stderr,
				// which serve logs: a call it reads before is served
				// without them, as a direct client's would be, but never
				// with another client's.
				got, _ := tool(t, c.sess, "list_allowed_directories", map[string]any{})
				t.Logf("client of %s: its first call got %q", c.own, got) // how often server-filesystem had not applied its roots yet
				if strings.Contains(got, dirs[c.else_]) {
					t.Errorf("client of %s: allowed directories %q at its instance's start", c.own, got)
				}
				applied = is.log.awaitN(t, applied, 1, "server-filesystem's roots applied", contains("Updated allowed directories from MCP roots: 1 valid"))
				got, _ = tool(t, c.sess, "list_allowed_directories", map[string]any{})
				if !strings.Contains(got, dirs[c.own]) || strings.Contains(got, dirs[c.else_]) {
					t.Errorf("client of %s: allowed directories %q", c.own, got)
				}
				text, isErr := tool(t, c.sess, "read_text_file", map[string]any{"path": filepath.Join(dirs[c.own], c.own+".txt")})
				if isErr || text != "the file of "+c.own {
					t.Errorf("client of %s reading its own file: %q (error %v)", c.own, text, isErr)
				}
				text, isErr = tool(t, c.sess, "read_text_file", map[string]any{"path": filepath.Join(dirs[c.else_], c.else_+".txt")})
				if !isErr || strings.Contains(text, "the file of") {
					t.Errorf("client of %s read the other's file: %q (error %v)", c.own, text, isErr)
				}
			}
			// The shared instance, and one of each client's.
			if n := len(is.started(t)); n != 3 {
				t.Errorf("%d backend processes, want 3 (the shared one and one per client)", n)
			}
		})
	}
}

// A shared server-filesystem is offered the roots its config declares,
// never a client's: its shared instance, which serves the 2025-11-25
// client, and its instance for 2026-07-28 clients, started by the first
// such client's call.
func TestSharedFilesystemHasTheConfiguredRoot(t *testing.T) {
	entry := filesystemServer(t)
	root := t.TempDir()
	dirs := fsTree(t, root, "shared", "b")
	is := serveIsolated(t, []string{"node", entry}, map[string]any{"isolation": "shared", "roots": []string{"file://" + dirs["shared"]}},
		"-log-level", "debug")
	is.awaitShared(t)
	// It applies them after it was answered, off its reader, and says so.
	is.log.awaitN(t, 0, 1, "server-filesystem's roots applied", contains("Updated allowed directories from MCP roots: 1 valid"))
	alice := is.client(t, "alice", conn.ClassicProtocolVersion, dirs["b"])
	bob := is.client(t, "bob", "", dirs["b"])
	// bob's first call starts the 2026-07-28 instance, which the server
	// may serve before it applied the roots it was answered (see
	// TestFilesystemClientsSeeOnlyTheirOwnRoots): never bob's own.
	if got, _ := tool(t, bob, "list_allowed_directories", map[string]any{}); strings.Contains(got, dirs["b"]) {
		t.Errorf("bob's first call: allowed directories %q, with bob's own root", got)
	}
	is.log.awaitN(t, 0, 2, "the 2026-07-28 instance's roots applied", contains("Updated allowed directories from MCP roots: 1 valid"))
	for name, sess := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		got, _ := tool(t, sess, "list_allowed_directories", map[string]any{})
		if !strings.Contains(got, dirs["shared"]) || strings.Contains(got, dirs["b"]) {
			t.Errorf("%s: allowed directories %q, want the configured root only", name, got)
		}
	}
	if n := len(is.started(t)); n != 2 {
		t.Errorf("%d backend processes, want the shared one and the one for 2026-07-28 clients", n)
	}
}

// Two clients whose calls elicit at once on one server each get their
// own answer; another client's requestState is refused without naming
// the call's input requests. The server asks as a 2026-07-28 server does,
// in the call's result, and serve's backend speaks 2026-07-28 to it.
func TestConcurrentElicitationsAndAReplayedRequestState(t *testing.T) {
	is := serveIsolated(t, []string{everything(t)}, nil)
	var wg sync.WaitGroup
	for _, who := range []string{"alice", "bob"} {
		sess := is.client(t, who, conn.ClassicProtocolVersion)
		wg.Go(func() {
			got, isErr := tool(t, sess, "test_input_required_result_elicitation", map[string]any{"message": "who?"})
			if isErr || !strings.Contains(got, "Hello, "+who) {
				t.Errorf("%s's elicitation answered %q (error %v)", who, got, isErr)
			}
		})
	}
	wg.Wait()

	// Alice, on 2026-07-28, gets her input request as the server gave it
	// (her instance speaks 2026-07-28 to it: its key, its requestState);
	// mallory sends the same round with answers of her own, and is served
	// by her own instance, with nothing of alice's.
	alice := rawModern(t, is, "alice")
	mallory := rawModern(t, is, "mallory")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{"message": "who?"}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("alice's modern call: %+v, %v; want input_required", res, err)
	}
	if _, ok := res.InputRequests["user_name"]; !ok || len(res.InputRequests) != 1 {
		t.Errorf("alice's input requests %v, want the server's own key user_name", slices.Collect(maps.Keys(res.InputRequests)))
	}
	answers := func(name string) mcp.InputResponseMap {
		m := mcp.InputResponseMap{}
		for id := range res.InputRequests {
			m[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}
		}
		return m
	}
	theirs, err := mallory.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{"message": "who?"},
		RequestState: res.RequestState, InputResponses: answers("mallory")})
	if err == nil && len(theirs.Content) > 0 {
		if text := theirs.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "alice") {
			t.Errorf("mallory's round with alice's state was answered with alice's data: %q", text)
		}
	}
	got, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{"message": "who?"},
		RequestState: res.RequestState, InputResponses: answers("alice")})
	if err != nil || !strings.Contains(fmt.Sprint(got.Content[0].(*mcp.TextContent).Text), "Hello, alice") {
		t.Fatalf("alice's own answer: %+v, %v", got, err)
	}

	// Alice abandons a round: bob's elicitation on his own instance goes
	// through at once.
	if res, err = alice.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{"message": "again?"}}); err != nil || !res.NeedsInput() {
		t.Fatalf("alice's second call: %+v, %v", res, err)
	}
	bob := is.client(t, "bob", "")
	if got, isErr := tool(t, bob, "test_input_required_result_elicitation", map[string]any{"message": "who?"}); isErr || !strings.Contains(got, "Hello, bob") {
		t.Errorf("bob's elicitation beside alice's abandoned round answered %q (error %v)", got, isErr)
	}
}

// rawModern is a 2026-07-28 client of serve as subject that sees the
// input requests of its calls itself. It declares elicitation in its
// requests' _meta: an input request a client did not declare is never
// sent to it.
func rawModern(t *testing.T, is *isolated, subject string) *mcp.ClientSession {
	t.Helper()
	// No roots: the call that starts its instance would ask for them
	// first, and the tests that use it are about elicitation.
	c := mcp.NewClient(&mcp.Implementation{Name: subject}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not reached: the test answers the input requests itself")
		}})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: is.url,
		HTTPClient: fixture.Bearer(is.issuer.Token(t, isolatedResource, subject, "mcp"))}, nil)
	if err != nil {
		t.Fatalf("%s connects: %v", subject, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// A client that vanishes without DELETE leaves no backend process once
// its session expires; SIGKILL of one client's backend touches no other
// client's.
func TestInstancesEndWithTheClientAndFailApart(t *testing.T) {
	is := serveIsolated(t, []string{fixture.Build(t)}, nil, "-session-timeout", "3s")
	shared := is.awaitStarted(t, 1)[0]
	alice := is.client(t, "alice", conn.ClassicProtocolVersion)
	if got, isErr := tool(t, alice, "echo", map[string]any{"text": "a"}); isErr || got != "a" {
		t.Fatalf("alice's echo: %q", got)
	}
	bob := is.client(t, "bob", conn.ClassicProtocolVersion)
	if got, isErr := tool(t, bob, "echo", map[string]any{"text": "b"}); isErr || got != "b" {
		t.Fatalf("bob's echo: %q", got)
	}
	pids := is.awaitStarted(t, 3)
	alicePID, bobPID := pids[1], pids[2]

	// SIGKILL of alice's backend: bob's calls go on at once, on the same
	// process; alice's instance reconnects.
	if err := syscall.Kill(alicePID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, alicePID, "alice's killed backend")
	if got, isErr := tool(t, bob, "echo", map[string]any{"text": "still"}); isErr || got != "still" {
		t.Errorf("bob's echo after alice's backend was killed: %q (error %v)", got, isErr)
	}
	if !fixture.Alive(bobPID) || !fixture.Alive(shared) {
		t.Error("killing alice's backend ended another process")
	}
	deadline := time.Now().Add(wait)
	for {
		got, isErr := tool(t, alice, "echo", map[string]any{"text": "back"})
		if !isErr && got == "back" {
			break
		}
		if !strings.Contains(got, "connection lost") && !strings.Contains(got, "reconnecting") {
			t.Fatalf("alice's echo during her backend's restart: %q", got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's instance did not come back within %v: %q", wait, got)
		}
		time.Sleep(100 * time.Millisecond) // the reconnect's backoff, seen from the client
	}

	// Carol vanishes without DELETE: her session expires after 3s, and
	// her backend process ends with it.
	abandon(t, is, "carol")
	pids = is.awaitStarted(t, 5) // alice's restart and carol's instance
	carolPID := pids[len(pids)-1]
	awaitGone(t, carolPID, "the backend of the client that vanished")
	if !fixture.Alive(shared) {
		t.Error("the shared instance's process ended with a client's session")
	}
}

// abandon opens a classic session as subject, makes one call that
// starts its instance, and goes away without DELETE.
func abandon(t *testing.T, is *isolated, subject string) {
	t.Helper()
	hc := fixture.Bearer(is.issuer.Token(t, isolatedResource, subject, "mcp"))
	post := func(session, body string) (string, string) {
		req, err := http.NewRequest(http.MethodPost, is.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", conn.ClassicProtocolVersion)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		return resp.Header.Get("Mcp-Session-Id"), b.String()
	}
	session, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"carol","version":"1"}}}`)
	if session == "" {
		t.Fatal("no session")
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, body := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c"}}}`); !strings.Contains(body, `"c"`) {
		t.Fatalf("%s's call: %s", subject, body)
	}
}
