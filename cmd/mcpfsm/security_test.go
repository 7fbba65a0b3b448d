package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "0123456789abcdef0123456789abcdef"

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// serveListening starts mcpfsm serve with args and env, and returns its
// MCP endpoint once it serves.
func serveListening(t *testing.T, env []string, args ...string) (*exec.Cmd, *watcher, string) {
	t.Helper()
	cmd := self(t, args...)
	cmd.Env = append(cmd.Env, env...)
	stderr := newWatcher()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	at := stderr.waitFor(t, 0, "serving MCP over Streamable HTTP at http://")
	url := strings.Fields(stderr.String()[at-len("http://"):])[0]
	return cmd, stderr, strings.TrimSuffix(url, `"`)
}

// post sends a JSON-RPC initialize to url with the given headers.
func post(t *testing.T, url string, header map[string]string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Without a token, serve refuses to listen beyond loopback, naming the fix,
// before any server starts.
func TestServeRefusesAnyAddressWithoutAToken(t *testing.T) {
	t.Setenv("MCPFSM_TOKEN", "")
	t.Setenv("MCPFSM_HTTP_TOKEN", "")
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	code, _, errOut := runCmd(t, "serve", "-config", cfg, "-listen", "0.0.0.0:0")
	if code != exitFail || !strings.Contains(errOut, "MCPFSM_TOKEN") || !strings.Contains(errOut, "127.0.0.1") {
		t.Fatalf("serve -listen 0.0.0.0:0 without a token: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = runCmd(t, "serve", "-config", cfg, "-listen", "127.0.0.1:0", "-http-token", "short")
	if code != exitFail || !strings.Contains(errOut, "at least 16") || strings.Contains(errOut, "short\n") {
		t.Fatalf("a 5-byte token: exit %d, stderr:\n%s", code, errOut)
	}
}

// With a token (from the environment, never the command line), every
// request of -listen needs it, cross-origin browser requests are refused,
// /healthz answers anyone and /readyz only with the token; the token is
// in no log and not in the process's command line.
func TestServeTokenRule(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "fix.pids")
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t), "args": []string{"-pidlog", pids}}}})
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd, stderr, url := serveListening(t, []string{"MCPFSM_TOKEN=" + testToken}, "serve", "-config", cfg, "-listen", "127.0.0.1:0", "-audit", trail)
	base := strings.TrimSuffix(url, "/mcp")

	resp := post(t, url, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("initialize without the token: %d %q, want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp = post(t, url, map[string]string{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("initialize from https://evil.example with the token: %d, want 403", resp.StatusCode)
	}
	resp = post(t, url, map[string]string{"Authorization": "Bearer " + testToken, "Host": "rebind.evil.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("initialize for Host rebind.evil.example: %d, want 403", resp.StatusCode)
	}
	if r, err := http.Get(base + "/healthz"); err != nil || r.StatusCode != http.StatusOK {
		t.Errorf("/healthz without the token: %v %v, want 200", r, err)
	} else {
		r.Body.Close()
	}
	if r, err := http.Get(base + "/readyz"); err != nil || r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/readyz without the token: %v %v, want 401", r, err)
	} else {
		r.Body.Close()
	}

	// mcpfsm probe, the chart's readiness probe, sends the token.
	if code, _, errOut := runCmd(t, "probe", "-url", base+"/readyz"); code != exitFail || !strings.Contains(errOut, "401") {
		t.Errorf("probe without the token: exit %d, stderr %q; want 1 naming 401", code, errOut)
	}
	t.Setenv("MCPFSM_TOKEN", testToken)
	if code, out, errOut := runCmd(t, "probe", "-url", base+"/readyz"); code != exitOK || !strings.Contains(out, `"ready":true`) {
		t.Errorf("probe with the token: exit %d, stdout %q, stderr %q; want 0 and ready", code, out, errOut)
	}

	fc := connect(t, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}})
	if text, isErr := fc.call(t, "mcp__fix__echo", "hi"); isErr || text != "hi" {
		t.Fatalf("call with the token = %q, isError %v", text, isErr)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
	if err == nil && strings.Contains(string(cmdline), testToken) {
		t.Errorf("the token is in serve's command line: %q", cmdline)
	}
	_ = fc.sess.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr.String(), testToken) {
		t.Errorf("the token is in serve's log:\n%s", stderr)
	}
	// -audit: one line for the one call, naming who called, without the
	// argument's value.
	data, err := os.ReadFile(trail)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Subject, Server, Name, Outcome string }
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil ||
		rec.Subject != "token" || rec.Server != "fix" || rec.Name != "mcp__fix__echo" || rec.Outcome != "ok" || strings.Contains(string(data), `"hi"`) {
		t.Errorf("audit trail:\n%s\nwant one record of the call by token, without its argument", data)
	}
	allGone(t, pids)
}

// testIssuer is the OAuth issuer of the tests.
type testIssuer struct{ *fixture.Issuer }

func newTestIssuer(t *testing.T) *testIssuer { return &testIssuer{fixture.NewIssuer(t)} }

// token is alice's token for aud with scope, expiring at exp.
func (is *testIssuer) token(t *testing.T, aud, scope string, exp time.Time) string {
	t.Helper()
	return is.TokenUntil(t, aud, "alice", scope, exp)
}

// With -oauth-issuer, a client holding a token of the issuer for serve's
// resource uses its tools; one without gets 401 naming the resource
// metadata, which serve publishes; an expired token, another audience and
// a missing scope are refused.
func TestServeOAuth(t *testing.T) {
	is := newTestIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	pids := filepath.Join(t.TempDir(), "fix.pids")
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t), "args": []string{"-pidlog", pids}}}})
	cmd, stderr, url := serveListening(t, nil, "serve", "-config", cfg, "-listen", "127.0.0.1:0",
		"-oauth-issuer", is.URL, "-oauth-resource", resource, "-oauth-scope", "mcp:tools")
	base := strings.TrimSuffix(url, "/mcp")

	resp := post(t, url, nil)
	challenge := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(challenge, "resource_metadata=") {
		t.Errorf("without a token: %d %q, want 401 naming resource_metadata", resp.StatusCode, challenge)
	}
	r, err := http.Get(base + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	err = json.NewDecoder(r.Body).Decode(&prm)
	r.Body.Close()
	if err != nil || prm.Resource != resource || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != is.URL {
		t.Errorf("protected resource metadata %+v (%v), want resource %s and the issuer", prm, err, resource)
	}
	for name, tc := range map[string]struct {
		tok  string
		want int
	}{
		"expired":        {is.token(t, resource, "mcp:tools", time.Now().Add(-time.Hour)), http.StatusUnauthorized},
		"other audience": {is.token(t, "https://other.example/mcp", "mcp:tools", time.Now().Add(time.Hour)), http.StatusUnauthorized},
		"missing scope":  {is.token(t, resource, "other", time.Now().Add(time.Hour)), http.StatusForbidden},
	} {
		if resp := post(t, url, map[string]string{"Authorization": "Bearer " + tc.tok}); resp.StatusCode != tc.want {
			t.Errorf("%s token: %d, want %d", name, resp.StatusCode, tc.want)
		}
	}

	good := is.token(t, resource, "mcp:tools", time.Now().Add(time.Hour))
	fc := connect(t, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{good, http.DefaultTransport}}})
	if text, isErr := fc.call(t, "mcp__fix__echo", "hi"); isErr || text != "hi" {
		t.Fatalf("call with the issuer's token = %q, isError %v", text, isErr)
	}
	_ = fc.sess.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	allGone(t, pids)
}

// An -allow-host name is served on a loopback bind too (a reverse proxy
// on the same host forwards that Host): the access rule checks Host, and
// go-sdk's own loopback check, which knows no allowed host, is off. A
// name not allowed is still refused.
func TestServeAllowedHostOnLoopback(t *testing.T) {
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	_, _, url := serveListening(t, []string{"MCPFSM_TOKEN=" + testToken}, "serve", "-config", cfg, "-listen", "127.0.0.1:0",
		"-allow-host", "mcp.example.test")
	if resp := post(t, url, map[string]string{"Authorization": "Bearer " + testToken, "Host": "mcp.example.test"}); resp.StatusCode != http.StatusOK {
		t.Errorf("initialize for the allowed Host mcp.example.test: %d, want 200", resp.StatusCode)
	}
	if resp := post(t, url, map[string]string{"Authorization": "Bearer " + testToken, "Host": "rebind.evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("initialize for Host rebind.evil.example: %d, want 403", resp.StatusCode)
	}
}
