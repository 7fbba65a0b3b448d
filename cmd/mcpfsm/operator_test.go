package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// consoleAddr returns the console's address from serve's or run's log.
func consoleAddr(t *testing.T, stderr *watcher) string {
	t.Helper()
	at := stderr.waitFor(t, 0, "console at http://")
	addr := strings.Fields(stderr.String()[at:])[0]
	return strings.TrimSuffix(strings.TrimSuffix(addr, `"`), "/")
}

// request sends method url with a bearer token ("" for none) and returns
// the status and body.
func request(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scoped signs a token of the issuer for aud with scope.
func (is *testIssuer) scoped(t *testing.T, aud, scope string) string {
	t.Helper()
	return is.TokenUntil(t, aud, "bob", scope, time.Now().Add(time.Hour))
}

// TestServeConsoleIsTheOperators: an MCP user's OAuth token, good for the
// tools, gets 403 on the console's status, reload and reconnect (it used
// to get 200 on all three); the operator's token works. With
// -console-oauth-scope, a token carrying that scope is an operator's.
func TestServeConsoleIsTheOperators(t *testing.T) {
	is := newTestIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	for _, withScope := range []bool{false, true} {
		args := []string{"serve", "-config", cfg, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0",
			"-oauth-issuer", is.URL, "-oauth-resource", resource, "-oauth-scope", "mcp:tools"}
		if withScope {
			args = append(args, "-console-oauth-scope", "mcpfsm:operator")
		}
		cmd, stderr, _ := serveListening(t, []string{"MCPFSM_TOKEN=" + testToken}, args...)
		console := "http://" + consoleAddr(t, stderr)
		user := is.scoped(t, resource, "mcp:tools")
		for _, tc := range []struct{ method, path string }{
			{"GET", "/api/status"}, {"POST", "/api/reload"}, {"POST", "/api/servers/fix/reconnect"}, {"POST", "/api/reconnect"},
		} {
			if code, body := request(t, tc.method, console+tc.path, user); code != http.StatusForbidden {
				t.Errorf("scope %v: %s %s with an MCP user's token: %d %s, want 403", withScope, tc.method, tc.path, code, body)
			}
		}
		if code, body := request(t, "GET", console+"/api/status", testToken); code != 200 {
			t.Errorf("scope %v: the operator's token: %d %s", withScope, code, body)
		}
		operator := is.scoped(t, resource, "mcp:tools mcpfsm:operator")
		want := http.StatusForbidden
		if withScope {
			want = 200
		}
		if code, body := request(t, "GET", console+"/api/status", operator); code != want {
			t.Errorf("scope %v: a token with mcpfsm:operator: %d %s, want %d", withScope, code, body, want)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := wait(t, cmd, stderr); code != 0 {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
	}
}

// TestServeSecretsByValue: a server whose env holds a secret of no
// credential shape prints it on stderr and exits. The value is in none of
// what leaves serve: /api/status, /api/events, /api/trace and the -trace
// file, the log, the console's /readyz; the /readyz of -listen, which any
// MCP user reads, names the server and its state only.
func TestServeSecretsByValue(t *testing.T) {
	const secret = "supersecret-env-value-123"
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	cfg := writeConfig(t, obj{"mcpServers": obj{
		"leaky": obj{"command": "sh", "args": []string{"-c", `echo "starting with $API_TOKEN" >&2; exit 3`},
			"env": obj{"API_TOKEN": secret}, "reconnect": obj{"enabled": false}},
		"fix": obj{"command": fixture.Build(t)},
	}})
	cmd, stderr, url := serveListening(t, []string{"MCPFSM_TOKEN=" + testToken}, "serve", "-config", cfg,
		"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-trace", trace, "-log-level", "debug")
	console := "http://" + consoleAddr(t, stderr)
	base := strings.TrimSuffix(url, "/mcp")
	var shown []string
	for _, p := range []string{"/api/status", "/api/trace", "/readyz"} {
		code, body := request(t, "GET", console+p, testToken)
		if code/100 != 2 && !(p == "/readyz" && code == 503) {
			t.Errorf("console %s: %d %s", p, code, body)
		}
		shown = append(shown, body)
	}
	if !strings.Contains(shown[0], "[redacted leaky.env.API_TOKEN]") {
		t.Errorf("/api/status does not show the redacted stderr:\n%s", shown[0])
	}
	// The first event of the stream.
	req, _ := http.NewRequest("GET", console+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data:") {
			shown = append(shown, line)
			break
		}
	}
	resp.Body.Close()
	code, ready := request(t, "GET", base+"/readyz", testToken)
	if code != 503 || !strings.Contains(ready, `"name":"leaky"`) || !strings.Contains(ready, `"state":"failed-disabled"`) ||
		strings.Contains(ready, "error") || strings.Contains(ready, "starting with") {
		t.Errorf("-listen /readyz: %d %s, want 503 naming leaky and its state, without its error", code, ready)
	}
	shown = append(shown, ready)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	file, _ := os.ReadFile(trace)
	shown = append(shown, string(file), stderr.String())
	for i, s := range shown {
		if strings.Contains(s, secret) {
			t.Errorf("output %d shows the secret:\n%s", i, s)
		}
	}
	if !strings.Contains(string(file), "[redacted leaky.env.API_TOKEN]") || !strings.Contains(stderr.String(), "[redacted leaky.env.API_TOKEN]") {
		t.Errorf("the trace or the log lacks the redacted stderr:\n%s\n%s", file, stderr)
	}
}

// TestServeMaxConnsCoversMaxSessions: a session holds its GET stream and
// a POST connection; -max-conns under twice -max-sessions is refused at
// start, naming the fix, and the default rises to cover it.
func TestServeMaxConnsCoversMaxSessions(t *testing.T) {
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	code, _, errOut := runCmd(t, "serve", "-config", cfg, "-listen", "127.0.0.1:0", "-unauthenticated",
		"-max-sessions", "1000", "-max-conns", "512")
	if code != exitFail || !strings.Contains(errOut, "-max-conns 512: under twice -max-sessions 1000") || !strings.Contains(errOut, "-max-conns 2000") {
		t.Errorf("exit %d, stderr %q; want the start refused naming -max-conns 2000", code, errOut)
	}
	a := addAccessFlags(newFlags("serve", ""), true)
	a.fs.Int("max-sessions", 256, "")
	if err := a.fs.Parse([]string{"-max-sessions", "1000"}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.maxConnsFor(); err != nil || n != 2000 {
		t.Errorf("default -max-conns with -max-sessions 1000: %d %v, want 2000", n, err)
	}
}

// TestServeRefusesEveryInterfaceWithoutAToken: ":0" is refused, saying
// that an empty host listens on every interface (it printed "( is not
// loopback)"); so is a made token beyond loopback.
func TestServeRefusesEveryInterfaceWithoutAToken(t *testing.T) {
	t.Setenv("MCPFSM_TOKEN", "")
	t.Setenv("MCPFSM_HTTP_TOKEN", "")
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	code, _, errOut := runCmd(t, "serve", "-config", cfg, "-listen", ":0")
	if code != exitFail || !strings.Contains(errOut, "an empty host listens on every interface") || strings.Contains(errOut, "( is") {
		t.Errorf("-listen :0: exit %d, stderr %q", code, errOut)
	}
}

// asNobody runs name with args as uid and gid 65534, and returns its
// output and error. It skips the test, saying why, when the test cannot
// change its uid (not root) or the program is missing.
func asNobody(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("a second local user needs root to switch to uid 65534; run the tests as root (CI does)")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: %v", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLoopbackRefusesAnotherUser: without a configured token, another
// local user (uid 65534) gets 401 from -listen's MCP endpoint and from
// the console's status and reload (it used to run the tools and reload),
// and cannot read the token serve made; the owner, reading it, is let in.
// On a unix socket another user cannot even connect.
func TestLoopbackRefusesAnotherUser(t *testing.T) {
	t.Setenv("MCPFSM_TOKEN", "")
	t.Setenv("MCPFSM_HTTP_TOKEN", "")
	// Directories every user can traverse, so that only the modes serve
	// sets guard the token file and the socket.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	t.Setenv("XDG_STATE_HOME", state)
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	cmd, stderr, url := serveListening(t, []string{"XDG_STATE_HOME=" + state}, "serve", "-config", cfg,
		"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0")
	console := "http://" + consoleAddr(t, stderr)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range [][]string{
		{"-X", "POST", "-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream", "-d", init, url},
		{console + "/api/status"},
		{"-X", "POST", console + "/api/reload"},
	} {
		out, err := asNobody(t, "curl", append([]string{"-s", "-o", "/dev/null", "-w", "%{http_code}"}, c...)...)
		if err != nil || out != "401" {
			t.Errorf("uid 65534: curl %v: %q %v, want 401", c, out, err)
		}
	}
	file, err := access.TokenFile(strings.TrimPrefix(console, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := asNobody(t, "cat", file); err == nil {
		t.Errorf("uid 65534 read the token file %s: %q", file, out)
	}
	if code, body := request(t, "GET", console+"/api/status", madeToken(t, strings.TrimPrefix(console, "http://"))); code != 200 {
		t.Errorf("the owner, with the token it can read: %d %s", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}

	// unix:PATH, mode 0600: no token, and no connection for another user.
	sock := filepath.Join(dir, "mcpfsm.sock")
	cmd = self(t, "serve", "-config", cfg, "-listen", "unix:"+sock)
	stderr = newWatcher()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	stderr.waitFor(t, 0, "serving MCP over Streamable HTTP")
	if out, err := asNobody(t, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock, "http://localhost/healthz"); err == nil {
		t.Errorf("uid 65534 reached the unix socket: %q", out)
	}
	out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock, "http://localhost/readyz").CombinedOutput()
	if err != nil || string(out) != "200" {
		t.Errorf("the owner over the unix socket without a token: %q %v, want 200", out, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestServeHealthzUnder1000IdleSockets: 500 kept-alive connections that
// each sent one /healthz without a token and 500 that send nothing; a
// liveness probe on a new connection is answered within a second, every
// time (it used to wait for a slot: 20 s and more).
func TestServeHealthzUnder1000IdleSockets(t *testing.T) {
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	cmd, stderr, url := serveListening(t, []string{"MCPFSM_TOKEN=" + testToken}, "serve", "-config", cfg, "-listen", "127.0.0.1:0")
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	for i := range 1000 {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if i%2 == 0 {
				fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	var worst time.Duration
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range 20 {
		start := time.Now()
		resp, err := probe.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("/healthz under 1,000 idle sockets: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/healthz under 1,000 idle sockets: %d", resp.StatusCode)
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("/healthz of serve under 1,000 idle sockets: worst of 20 probes %v", worst)
	if worst > time.Second {
		t.Errorf("/healthz under 1,000 idle sockets took up to %v", worst)
	}
	for _, c := range conns {
		c.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
