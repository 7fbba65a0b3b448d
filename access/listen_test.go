package access

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListenLoopbackOnlyWithoutAuth(t *testing.T) {
	open, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	withToken, err := New(Config{Token: goodToken})
	if err != nil {
		t.Fatal(err)
	}
	madeToken := mustRule(t, Config{Token: goodToken, LoopbackOnly: true})
	for _, tc := range []struct {
		addr    string
		rule    *Rule
		refused bool
	}{
		{"127.0.0.1:0", open, false},
		{"localhost:0", open, false},
		{"[::1]:0", open, false},
		{"0.0.0.0:0", open, true},
		{":0", open, true},
		{"[::]:0", open, true},
		{"0.0.0.0:0", withToken, false},
		{":0", withToken, false},
		{"0.0.0.0:0", madeToken, true},
		{"127.0.0.1:0", madeToken, false},
	} {
		ln, err := tc.rule.Listen(tc.addr)
		if ln != nil {
			ln.Close()
		}
		if tc.refused {
			if !errors.Is(err, ErrNeedAuth) {
				t.Errorf("Listen(%q) = %v, want ErrNeedAuth", tc.addr, err)
			} else if !strings.Contains(err.Error(), "set MCPFSM_TOKEN or -token-file, or listen on 127.0.0.1:PORT") {
				t.Errorf("Listen(%q) = %v, want the fix named", tc.addr, err)
			}
			continue
		}
		var oe *net.OpError
		if errors.As(err, &oe) && strings.Contains(tc.addr, "::1") {
			t.Logf("Listen(%q): %v (no IPv6 here)", tc.addr, err)
			continue
		}
		if err != nil {
			t.Errorf("Listen(%q): %v", tc.addr, err)
		}
	}
	if _, err := open.Listen("8080"); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("Listen without a port: %v, want an error naming HOST:PORT", err)
	}
}

// TestListenResolvesNames: without a token, a host name is resolved
// before the loopback check: one naming loopback addresses only is
// served (it was refused), one naming any other address is not, and
// ":PORT" says it listens on every interface.
func TestListenResolvesNames(t *testing.T) {
	defer func(f func(context.Context, string) ([]net.IPAddr, error)) { lookupIP = f }(lookupIP)
	lookupIP = func(_ context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "vm":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
		case "mixed":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("192.0.2.7")}}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	open := mustRule(t, Config{})
	ln, err := open.Listen("vm:0")
	if err != nil {
		t.Fatalf("Listen(vm:0) with vm at 127.0.0.1: %v", err)
	}
	ln.Close()
	for addr, want := range map[string]string{
		"mixed:0":   "mixed resolves to 192.0.2.7, which is not loopback",
		":0":        "an empty host listens on every interface",
		"nowhere:0": "no such host",
	} {
		_, err := open.Listen(addr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Listen(%q) = %v, want an error saying %q", addr, err, want)
		}
	}
}

// TestListenUnix: unix:PATH makes a socket of mode 0600 (the rule's caps
// apply), serves HTTP on it, and removes it when closed; a file that is
// not a socket is not replaced.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpfsm.sock")
	ln, err := mustRule(t, Config{}).Listen("unix:" + path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v %v, want a socket of mode 0600", fi, err)
	}
	if ln.Addr().String() != path {
		t.Errorf("Addr() = %q, want %q", ln.Addr(), path)
	}
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), ServerOptions{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	resp, err := client.Get("http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("over the socket: %q", body)
	}
	client.CloseIdleConnections()
	srv.Close()
	<-served
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close the socket is still there: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left in the directory: %v", entries)
	}
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRule(t, Config{}).Listen("unix:" + path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen on a regular file: %v, want refused", err)
	}
}
