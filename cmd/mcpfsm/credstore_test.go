package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// Two mcpfsm processes on one Redis store, each with a state directory of
// its own: a caller signs in through one (mcpfsm auth login
// -credential-store), and the other (serve, given the store by
// $MCPFSM_CREDENTIAL_STORE), waiting for a sign-in, comes up with the
// credential and calls the server. No credential file is written, no
// secret is printed, and a process with another key, or none, is told
// which variable to fix.
func TestReplicasShareRedisCredentials(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("$BROWSER is a POSIX convention")
	}
	as := fixture.NewAuthServer(t)
	store := fixture.StartRedis(t)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	key := base64.StdEncoding.EncodeToString(k)
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})
	stateA, stateB := t.TempDir(), t.TempDir()

	serve, stderr, fc := serveStdioProcess(t, []string{"XDG_STATE_HOME=" + stateB, credentialStoreEnv + "=" + store, "MCPFSM_CREDENTIAL_KEY=" + key},
		"serve", "-config", cfg)
	stderr.waitFor(t, 0, `server "notes"`, "needs a sign-in")

	login := self(t, "auth", "login", "notes", "-config", cfg, "-credential-store", store)
	browser := filepath.Join(t.TempDir(), "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\n"+testBrowserEnv+"=follow exec '"+os.Args[0]+"' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	login.Env = append(login.Env, "BROWSER="+browser, "XDG_STATE_HOME="+stateA, "MCPFSM_CREDENTIAL_KEY="+key)
	out, lerr := newWatcher(), newWatcher()
	login.Stdout, login.Stderr = out, lerr
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, login)
	if code := wait(t, login, lerr); code != 0 {
		t.Fatalf("auth login: exit %d; stdout:\n%s\nstderr:\n%s", code, out, lerr)
	}
	select {
	case <-fc.changes:
	case <-time.After(limit):
		t.Fatalf("serve never listed the server's tools after the sign-in through the other process; stderr:\n%s", stderr)
	}
	if text, isErr := fc.call(t, "mcp__notes__whoami", ""); isErr || !strings.Contains(text, "subject user-") {
		t.Errorf("call through the other process = %q (isError %v); want the signed-in subject", text, isErr)
	}
	for _, dir := range []string{stateA, stateB} {
		if files, _ := filepath.Glob(filepath.Join(dir, "mcpfsm", "credentials", "*")); len(files) != 0 {
			t.Errorf("credential files with the Redis store: %v", files)
		}
	}

	// Another key, or none: the error names the variable and the fix.
	other := make([]byte, 32)
	_, _ = rand.Read(other)
	for _, tc := range []struct{ key, want string }{
		{base64.StdEncoding.EncodeToString(other), "give every replica the same key"},
		{"", "MCPFSM_CREDENTIAL_KEY is not set"},
	} {
		status := self(t, "auth", "status", "-config", cfg)
		status.Env = append(status.Env, credentialStoreEnv+"="+store, "MCPFSM_CREDENTIAL_KEY="+tc.key)
		sout, err := status.CombinedOutput()
		if err == nil || !strings.Contains(string(sout), tc.want) {
			t.Errorf("auth status (a key given: %v): %v, %q; want a failure saying %q", tc.key != "", err, sout, tc.want)
		}
		if strings.Contains(string(sout), key) || (tc.key != "" && strings.Contains(string(sout), tc.key)) {
			t.Errorf("auth status printed a key")
		}
	}
	status := self(t, "auth", "status", "-config", cfg, "-credential-store", store)
	status.Env = append(status.Env, "MCPFSM_CREDENTIAL_KEY="+key)
	sout, err := status.Output()
	if err != nil || !strings.Contains(string(sout), "notes\tsigned in\tissuer "+as.Issuer) {
		t.Errorf("auth status = %q, %v", sout, err)
	}

	_ = fc.sess.Close()
	if code := wait(t, serve, stderr); code != 0 {
		t.Errorf("serve: exit %d", code)
	}
	all := stderr.String() + out.String() + lerr.String() + string(sout)
	for _, s := range append(as.Secrets(), key) {
		if strings.Contains(all, s) {
			t.Errorf("a token, code, verifier or the key appears in mcpfsm's output")
			break
		}
	}
}

// redisClients is how many clients the Redis at url has connected, this
// one included.
func redisClients(t *testing.T, url string) int {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	info, err := c.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no connected_clients in INFO clients: %q", info)
	return 0
}

// The sign-ins of serve (and run, tools, call) close their Redis
// credential store when they end: its connections, the subscription
// included, are gone from the Redis server.
func TestSignInsCloseTheRedisStore(t *testing.T) {
	url := fixture.StartRedis(t)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	t.Setenv("MCPFSM_CREDENTIAL_KEY", base64.StdEncoding.EncodeToString(k))
	before := redisClients(t, url)
	s := newSignIns("serve", "mcpfsm.json", url, io.Discard, nil)
	if s.err != nil {
		t.Fatal(s.err)
	}
	if n := redisClients(t, url); n <= before {
		t.Fatalf("%d Redis clients with the store open, %d before: the store holds no connection?", n, before)
	}
	s.close()
	deadline := time.Now().Add(limit)
	n := redisClients(t, url)
	for n != before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the Redis server sees the closed sockets
		n = redisClients(t, url)
	}
	if n != before {
		t.Errorf("%d Redis clients after the sign-ins closed, %d before: the store was not closed", n, before)
	}
}

// Two serve replicas of one gateway (OAuth callers, per-caller upstream
// credentials) share one Redis credential store: alice signs in to the
// upstream through replica 1 and calls it through replica 2 as herself,
// without signing in again. Redis holds nothing readable without the
// key: no token, code, verifier, subject or URL in any key or value, and
// a store opened with another key is refused.
func TestReplicasSharePerCallerSignIn(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	as := fixture.NewAuthServer(t)
	is := newTestIssuer(t)
	store := fixture.StartRedis(t)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	key := base64.StdEncoding.EncodeToString(k)
	cfg := writeConfig(t, obj{"mcpServers": obj{"notes": obj{"type": "http", "url": as.Resource}}})
	// One resource URL for both, as behind a load balancer; the sign-in's
	// redirect reaches replica 1, which started it.
	port1, port2 := freeLoopbackPort(t), freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port1 + "/mcp"
	callback := "http://127.0.0.1:" + port1 + "/oauth/callback"
	replica := func(port string) (*watcher, string) {
		env := []string{"BROWSER=", "XDG_STATE_HOME=" + t.TempDir(), credentialStoreEnv + "=" + store, "MCPFSM_CREDENTIAL_KEY=" + key}
		_, stderr, endpoint := serveListening(t, env, "serve", "-config", cfg, "-listen", "127.0.0.1:"+port,
			"-oauth-issuer", is.URL, "-oauth-resource", resource)
		return stderr, endpoint
	}
	stderr1, endpoint1 := replica(port1)
	stderr2, endpoint2 := replica(port2)
	token := is.Token(t, resource, "alice", "mcp")

	alice1 := connectCaller(t, endpoint1, token, "alice")
	text, isErr := alice1.call(t, "mcp__notes__whoami", "")
	if !isErr || !strings.Contains(text, as.Issuer+"/authorize?") {
		t.Fatalf("alice's first call through replica 1 = %q (isError %v); want her sign-in link", text, isErr)
	}
	var p *mcp.ElicitParams
	select {
	case p = <-alice1.asked:
	case <-time.After(limit):
		t.Fatalf("replica 1 never asked alice to sign in; stderr:\n%s", stderr1)
	}
	consent(t, p.URL, "alice", callback)
	select {
	case <-alice1.complete:
	case <-time.After(limit):
		t.Fatalf("replica 1 never told alice her sign-in was complete; stderr:\n%s", stderr1)
	}

	alice2 := connectCaller(t, endpoint2, token, "alice")
	if text, isErr := alice2.call(t, "mcp__notes__whoami", ""); isErr || text != "subject alice" {
		t.Errorf("alice's call through replica 2 = %q (isError %v); want her, signed in through replica 1; stderr:\n%s", text, isErr, stderr2)
	}
	select {
	case p := <-alice2.asked:
		t.Errorf("replica 2 asked alice to sign in again: %s", p.URL)
	default:
	}
	for _, sub := range as.Accepted() {
		if sub != "alice" {
			t.Errorf("the upstream accepted a token of %q", sub)
		}
	}

	// What Redis holds, read without the key.
	opt, err := redis.ParseURL(store)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("Redis keys: %v, %v; want the stored credential", keys, err)
	}
	var raw strings.Builder
	for _, k := range keys {
		raw.WriteString(k + "\n")
		switch typ, _ := rdb.Type(ctx, k).Result(); typ {
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				raw.WriteString(f + "=" + v + "\n")
			}
		case "string":
			raw.WriteString(rdb.Get(ctx, k).Val() + "\n")
		}
	}
	all := raw.String()
	for _, s := range append(as.Secrets(), "alice", as.Resource, as.Issuer, "client-", "Bearer", token) {
		if strings.Contains(all, s) {
			t.Errorf("Redis holds %.12q... in clear", s)
		}
	}
	other := make([]byte, 32)
	_, _ = rand.Read(other)
	t.Setenv("MCPFSM_CREDENTIAL_KEY", base64.StdEncoding.EncodeToString(other))
	if s, err := credentialStore(store); err == nil {
		s.(io.Closer).Close()
		t.Error("a store opened with another key was not refused")
	} else if !strings.Contains(err.Error(), "give every replica the same key") {
		t.Errorf("a store opened with another key: %v; want the fix", err)
	}
	noSignInSecret(t, as, "a replica's stderr", stderr1.String(), stderr2.String())
}
