package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// testBrowserEnv makes the test binary a browser ($BROWSER): it opens
// the URL it is given, follows the authorization server's redirect to the
// loopback listener and exits. With "tamper" it first delivers the
// redirect with a forged state and fails unless the listener refuses it.
const testBrowserEnv = "MCPFSM_TEST_BROWSER"

func testBrowser(mode string, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "test browser: want one URL")
		return 2
	}
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (*http.Response, error) {
		resp, err := client.Get(u)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, nil
	}
	resp, err := get(args[0])
	if err != nil || resp.StatusCode != http.StatusFound {
		fmt.Fprintln(os.Stderr, "test browser: the authorization endpoint did not redirect:", err)
		return 1
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return 1
	}
	if mode == "tamper" {
		bad := *loc
		q := bad.Query()
		q.Set("state", "forged")
		bad.RawQuery = q.Encode()
		r, err := get(bad.String())
		if err != nil || r.StatusCode != http.StatusBadRequest {
			fmt.Fprintln(os.Stderr, "test browser: a forged state was not refused:", err)
			return 1
		}
	}
	r, err := get(loc.String())
	if err != nil || r.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "test browser: the callback failed:", err)
		return 1
	}
	return 0
}

// A remote server that needs OAuth, behind serve: it waits for a
// sign-in (one stderr line saying how), calls are answered at once with
// how to sign in, 'mcpfsm auth login' with $BROWSER signs in (refusing a
// forged redirect) and stores a 0600 file, the running serve comes up
// without a restart, auth status and logout see it, and none of the
// authorization server's tokens, codes or verifiers reaches any output.
func TestServeSignInWithAuthLogin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("$BROWSER is a POSIX convention")
	}
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	as := fixture.NewAuthServer(t)
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})

	cmd, stderr, fc := serveStdioProcess(t, nil, "serve", "-config", cfg)
	hint := "mcpfsm auth login notes -config " + cfg
	stderr.waitFor(t, 0, `server "notes"`, "needs a sign-in: run: "+hint)

	start := time.Now()
	text, isErr := fc.call(t, "mcp__notes__whoami", "")
	if !isErr || !strings.Contains(text, "sign in") || !strings.Contains(text, hint) {
		t.Errorf("call before the sign-in = %q (isError %v); want a tool error saying %q", text, isErr, hint)
	}
	t.Logf("call before the sign-in: %s", text)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v; want it answered at once", d)
	}

	login := self(t, "auth", "login", "notes", "-config", cfg)
	browser := filepath.Join(t.TempDir(), "browser.sh")
	script := "#!/bin/sh\n" + testBrowserEnv + "=tamper exec '" + os.Args[0] + "' \"$1\"\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	login.Env = append(login.Env, "BROWSER="+browser)
	out, lerr := newWatcher(), newWatcher()
	login.Stdout, login.Stderr = out, lerr
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, login)
	if code := wait(t, login, lerr); code != 0 {
		t.Fatalf("auth login: exit %d; stdout:\n%s\nstderr:\n%s", code, out, lerr)
	}
	if !strings.Contains(out.String(), `server "notes": signed in`) {
		t.Errorf("auth login printed %q", out)
	}
	files, _ := filepath.Glob(filepath.Join(state, "mcpfsm", "credentials", "*.json"))
	if len(files) != 1 {
		t.Fatalf("credential files %v, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credential file %s: %v, mode %v; want 0600", files[0], err, fi.Mode().Perm())
	}

	// serve re-reads the store while it waits: the server comes up.
	select {
	case <-fc.changes:
	case <-time.After(limit):
		t.Fatalf("serve never listed the server's tools after the sign-in; stderr:\n%s", stderr)
	}
	if text, isErr := fc.call(t, "mcp__notes__whoami", ""); isErr || !strings.Contains(text, "subject user-") {
		t.Errorf("call after the sign-in = %q (isError %v); want the signed-in subject", text, isErr)
	}

	status := self(t, "auth", "status", "-config", cfg)
	sout, err := status.Output()
	if err != nil || !strings.Contains(string(sout), "notes\tsigned in\tissuer "+as.Issuer) {
		t.Errorf("auth status = %q, %v", sout, err)
	}

	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("serve: exit %d", code)
	}
	all := stderr.String() + out.String() + lerr.String() + string(sout)
	for _, s := range as.Secrets() {
		if strings.Contains(all, s) {
			t.Errorf("a token, code or verifier of the sign-in appears in mcpfsm's output")
			break
		}
	}

	logout := self(t, "auth", "logout", "notes", "-config", cfg)
	if lout, err := logout.CombinedOutput(); err != nil || !strings.Contains(string(lout), "1 credential(s) removed") {
		t.Errorf("auth logout = %q, %v", lout, err)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "mcpfsm", "credentials", "*.json")); len(files) != 0 {
		t.Errorf("credential files after logout: %v", files)
	}
}
