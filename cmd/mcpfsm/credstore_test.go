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
