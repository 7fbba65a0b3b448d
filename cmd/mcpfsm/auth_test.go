package main

import (
	"context"
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
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	// serve starts a sign-in itself: one line with its URL and the command.
	stderr.waitFor(t, 0, `server "notes" needs a sign-in: open `+as.Issuer+"/authorize?", "(or run: "+hint+")")

	start := time.Now()
	text, isErr := fc.call(t, "mcp__notes__whoami", "")
	if !isErr || !strings.Contains(text, "sign in") || !strings.Contains(text, hint) || !strings.Contains(text, as.Issuer+"/authorize?") {
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
	noSignInSecret(t, as, "mcpfsm's output", stderr.String(), out.String(), lerr.String(), string(sout))

	logout := self(t, "auth", "logout", "notes", "-config", cfg)
	if lout, err := logout.CombinedOutput(); err != nil || !strings.Contains(string(lout), "1 credential(s) removed") {
		t.Errorf("auth logout = %q, %v", lout, err)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "mcpfsm", "credentials", "*.json")); len(files) != 0 {
		t.Errorf("credential files after logout: %v", files)
	}
}

// followSignIn plays the person's browser in the test process: it opens
// authURL, delivers the redirect first with a forged state (which must be
// refused with 400, and the sign-in go on waiting), then as it came.
func followSignIn(t *testing.T, authURL string) error {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string, error) {
		resp, err := client.Get(u)
		if err != nil {
			return 0, "", err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location"), nil
	}
	code, loc, err := get(authURL)
	if err != nil || code != http.StatusFound {
		return fmt.Errorf("the authorization endpoint answered %d, %v", code, err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	bad := *u
	q := bad.Query()
	q.Set("state", "forged-"+q.Get("state"))
	bad.RawQuery = q.Encode()
	if code, _, err := get(bad.String()); err != nil || code != http.StatusBadRequest {
		return fmt.Errorf("a redirect with a forged state got %d, %v; want 400", code, err)
	}
	if code, _, err := get(loc); err != nil || code != http.StatusOK {
		return fmt.Errorf("the redirect got %d, %v; want 200", code, err)
	}
	return nil
}

// serve starts the sign-in itself and asks its stdio client to open the
// authorization URL with a URL-mode elicitation: a 2025-11-25 client at
// once (elicitation/create, then notifications/elicitation/complete when
// the sign-in ends), a 2026-07-28 client in its call to the server (an
// input request of the call's multi round-trip result). A call meanwhile
// is answered at once with the URL and the command; a redirect with a
// forged state is refused and the sign-in goes on; once the redirect
// arrives the server comes up without a restart. No token, code or
// verifier reaches serve's output.
func TestServeSignInByURLElicitation(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) { testServeSignInByURLElicitation(t, era) })
	}
}

func testServeSignInByURLElicitation(t *testing.T, era string) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	as := fixture.NewAuthServer(t)
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})

	asked := make(chan *mcp.ElicitParams, 4)
	complete := make(chan string, 4)
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			complete <- req.Params.ElicitationID
		},
	}
	cmd, stderr, fc := serveStdioProcessWith(t, []string{"BROWSER="}, opts, &mcp.ClientSessionOptions{ProtocolVersion: era}, "serve", "-config", cfg, "-log-level", "debug")
	at := stderr.waitFor(t, 0, `server "notes" needs a sign-in: open `+as.Issuer+"/authorize?", " (or run: mcpfsm auth login notes -config "+cfg+")")

	start := time.Now()
	text, isErr := fc.call(t, "mcp__notes__whoami", "")
	if !isErr || !strings.Contains(text, as.Issuer+"/authorize?") || !strings.Contains(text, "mcpfsm auth login notes -config "+cfg) {
		t.Errorf("call before the sign-in = %q (isError %v); want the URL and the command", text, isErr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v; want it answered at once", d)
	}
	var p *mcp.ElicitParams
	select {
	case p = <-asked:
	case <-time.After(limit):
		t.Fatalf("serve never asked its client to sign in; stderr:\n%s", stderr)
	}
	if p.Mode != "url" || !strings.HasPrefix(p.URL, as.Issuer+"/authorize?") || p.ElicitationID == "" || !strings.Contains(p.Message, `"notes"`) {
		t.Fatalf("elicitation = %+v; want mode url, the authorization URL, an ID and the server's name", p)
	}
	if !strings.Contains(text, p.URL) || !strings.Contains(stderr.String(), "open "+p.URL+" (or run") {
		t.Errorf("the call's error and the stderr line do not show the URL the client was asked to open")
	}

	if err := followSignIn(t, p.URL); err != nil {
		t.Fatal(err)
	}
	if era == "2025-11-25" {
		select {
		case id := <-complete:
			if id != p.ElicitationID {
				t.Errorf("elicitation complete for %q, want %q", id, p.ElicitationID)
			}
		case <-time.After(limit):
			t.Fatalf("serve never said the sign-in was complete; stderr:\n%s", stderr)
		}
	}
	stderr.waitFor(t, at, "sign-in ended", "signed_in=true", "state=established")
	if text, isErr := fc.call(t, "mcp__notes__whoami", ""); isErr || !strings.Contains(text, "subject user-") {
		t.Errorf("call after the sign-in = %q (isError %v); want the signed-in subject", text, isErr)
	}
	select {
	case p2 := <-asked:
		t.Errorf("asked to sign in again: %+v", p2)
	default:
	}
	files, _ := filepath.Glob(filepath.Join(state, "mcpfsm", "credentials", "*.json"))
	if len(files) != 1 {
		t.Fatalf("credential files %v, want one", files)
	}
	_ = fc.sess.Close()
	if code := wait(t, cmd, stderr); code != 0 {
		t.Errorf("serve: exit %d", code)
	}
	noSignInSecret(t, as, "serve's output", stderr.String(), text)
}

// mcpfsm tools signs in as serve does: with $BROWSER set, the sign-in it
// starts opens the browser (a script following the URL), and tools lists
// the server's tools once the credential is stored.
func TestToolsSignsInWithBrowser(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("$BROWSER is a POSIX convention")
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	as := fixture.NewAuthServer(t)
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})
	browser := filepath.Join(t.TempDir(), "browser.sh")
	script := "#!/bin/sh\n" + testBrowserEnv + "=tamper exec '" + os.Args[0] + "' \"$1\"\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := self(t, "tools", "-config", cfg)
	tools.Env = append(tools.Env, "BROWSER="+browser)
	out, errw := newWatcher(), newWatcher()
	tools.Stdout, tools.Stderr = out, errw
	if err := tools.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, tools)
	if code := wait(t, tools, errw); code != 0 {
		t.Fatalf("tools: exit %d; stdout:\n%s\nstderr:\n%s", code, out, errw)
	}
	if !strings.Contains(out.String(), "mcp__notes__whoami") {
		t.Errorf("tools printed %q; want the signed-in server's tool", out)
	}
	if !strings.Contains(errw.String(), `server "notes" needs a sign-in: open `+as.Issuer+"/authorize?") {
		t.Errorf("tools' stderr %q; want the sign-in line", errw)
	}
	noSignInSecret(t, as, "tools' output", out.String(), errw.String())
}
