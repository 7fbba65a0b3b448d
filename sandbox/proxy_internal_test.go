package sandbox

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// startProxy serves a proxy for spec on loopback.
func startProxy(t *testing.T, spec *Spec, logs io.Writer) (*proxy, *url.URL) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(spec, slog.New(slog.NewTextHandler(logs, nil)))
	p.serve(ln)
	t.Cleanup(p.close)
	return p, &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func through(u *url.URL) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
}

func TestProxyForwardsAndRefuses(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host %s proxy-auth %q", r.Host, r.Header.Get("Proxy-Authorization"))
	}))
	defer backend.Close()
	port := backend.Listener.Addr().(*net.TCPAddr).Port
	var logs bytes.Buffer
	_, u := startProxy(t, &Spec{AllowedDomains: []string{"localhost"}}, &logs)
	c := through(u)
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://localhost:%d/x", port), nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != fmt.Sprintf(`host localhost:%d proxy-auth ""`, port) {
		t.Errorf("through the proxy: %d %q", resp.StatusCode, body)
	}
	for range 3 {
		resp, err = c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a host not allowed: %d, want 403", resp.StatusCode)
		}
	}
	if n := strings.Count(logs.String(), "the sandbox refused a connection to 127.0.0.1:"); n != 1 {
		t.Errorf("%d refusal records for one destination, want 1:\n%s", n, logs.String())
	}
}

func TestProxyTunnelsConnect(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "over tls") }))
	defer backend.Close()
	port := backend.Listener.Addr().(*net.TCPAddr).Port
	var logs bytes.Buffer
	_, u := startProxy(t, &Spec{AllowedDomains: []string{"localhost"}, DeniedDomains: []string{"127.0.0.1"}}, &logs)
	c := through(u)
	defer c.CloseIdleConnections()
	resp, err := c.Get(fmt.Sprintf("https://localhost:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "over tls" {
		t.Errorf("through a CONNECT tunnel: %q", body)
	}
	if _, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/", port)); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("CONNECT to a denied host: %v, want Forbidden", err)
	}
	if !strings.Contains(logs.String(), "network.deniedDomains has 127.0.0.1") {
		t.Errorf("the refusal does not say why:\n%s", logs.String())
	}
}

func TestProxyCloseEndsTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p, u := startProxy(t, &Spec{AllowedDomains: []string{"127.0.0.1"}}, io.Discard)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", ln.Addr(), ln.Addr())
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("CONNECT: %q, %v", line, err)
	}
	dst := <-accepted
	defer dst.Close()
	p.close() // returns once the tunnel's goroutines have ended
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the tunnel is still open after close")
	}
}

func TestProxyRejectsOriginForm(t *testing.T) {
	_, u := startProxy(t, &Spec{AllowedDomains: []string{"localhost"}}, io.Discard)
	resp, err := http.Get(u.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an origin-form request: %d, want 400", resp.StatusCode)
	}
}

func TestRefusalsLoggedAreBounded(t *testing.T) {
	var logs bytes.Buffer
	p := newProxy(&Spec{}, slog.New(slog.NewTextHandler(&logs, nil)))
	for i := range 3 * proxyLoggedRefusals {
		p.refused(fmt.Sprintf("h%d:1", i), "not in network.allowedDomains")
	}
	if n := strings.Count(logs.String(), "\n"); n != proxyLoggedRefusals+1 {
		t.Errorf("%d log records for %d destinations, want %d", n, 3*proxyLoggedRefusals, proxyLoggedRefusals+1)
	}
}

func TestOOMWatchSeesSplitPhrases(t *testing.T) {
	w := &oomWatch{}
	w.Write([]byte("fatal error: runtime: out of me"))
	if w.sawOOM() {
		t.Fatal("half a phrase counted")
	}
	w.Write([]byte("mory\ngoroutine 1 [running]:\n"))
	if !w.sawOOM() {
		t.Error("a phrase split across writes was missed")
	}
}

func TestRefusalsShowHostileNamesSafely(t *testing.T) {
	for in, want := range map[string]string{
		"evil.example:443":        "evil.example:443",
		"a\nlevel=ERROR msg=x:80": `"a\nlevel=ERROR msg=x:80"`,
		strings.Repeat("a", 400):  strings.Repeat("a", 300) + "...",
	} {
		if got := shown(in); got != want {
			t.Errorf("shown(%q) = %q, want %q", in, got, want)
		}
	}
}
