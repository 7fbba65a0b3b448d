package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// consoleDo sends method path to the console at addr with the operator's
// token and header, and returns the status and body.
func consoleDo(t *testing.T, method, addr, path, token string, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// consoleServerStatus is server name's entry of the console's /api/status.
func consoleServerStatus(t *testing.T, addr, token, name string) console.ServerStatus {
	t.Helper()
	code, body := consoleDo(t, "GET", addr, "/api/status", token, nil)
	var r console.StatusReport
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil {
		t.Fatalf("/api/status: %d %v %s", code, err, body)
	}
	for _, s := range r.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("/api/status has no server %q: %s", name, body)
	return console.ServerStatus{}
}

// The console of serve shows a remote server that needs a sign-in
// (needs-authorization, signIn offered), and the operator starts it from
// there: POST /api/servers/NAME/signin answers the authorization URL
// (refused from another origin); following it signs serve in, and the
// server comes up without a restart. No token, code or verifier of the
// sign-in reaches serve's output or the console.
func TestConsoleStartsSignIn(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	as := fixture.NewAuthServer(t)
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})
	cmd, stderr, fc := serveStdioProcess(t, nil, "serve", "-config", cfg, "-http", "127.0.0.1:0")
	addr := consoleAddr(t, stderr)
	token := madeToken(t, addr)
	stderr.waitFor(t, 0, `server "notes" needs a sign-in`)
	stderr.waitFor(t, 0, "server=notes state=needs-authorization")
	st := consoleServerStatus(t, addr, token, "notes")
	if st.State != "needs-authorization" || !st.SignIn {
		t.Fatalf("the console shows notes as %s (signIn %v); want needs-authorization with a sign-in to start", st.State, st.SignIn)
	}

	if code, _ := consoleDo(t, "POST", addr, "/api/servers/notes/signin", token, http.Header{"Origin": {"http://evil.example"}}); code != http.StatusForbidden {
		t.Errorf("a sign-in started from another origin: %d, want 403", code)
	}
	code, body := consoleDo(t, "POST", addr, "/api/servers/notes/signin", token, http.Header{"Origin": {"http://" + addr}})
	var res console.SignInResult
	if err := json.Unmarshal(body, &res); code != http.StatusOK || err != nil || !strings.HasPrefix(res.URL, as.Issuer+"/authorize?") {
		t.Fatalf("POST /api/servers/notes/signin: %d %v %s; want 200 with the authorization URL", code, err, body)
	}
	if err := followSignIn(t, res.URL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fc.changes:
	case <-time.After(limit):
		t.Fatalf("serve never listed the server's tools after the sign-in; stderr:\n%s", stderr)
	}
	if text, isErr := fc.call(t, "mcp__notes__whoami", ""); isErr || !strings.Contains(text, "subject user-") {
		t.Errorf("call after the sign-in = %q (isError %v); want the signed-in subject", text, isErr)
	}
	if st := consoleServerStatus(t, addr, token, "notes"); st.State != "established" || st.SignIn {
		t.Errorf("after the sign-in the console shows %s (signIn %v); want established, no sign-in", st.State, st.SignIn)
	}
	_, status := consoleDo(t, "GET", addr, "/api/status", token, nil)

	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("serve: exit %d", code)
	}
	noSignInSecret(t, as, "serve's output or the console", stderr.String(), string(body), string(status))
}
