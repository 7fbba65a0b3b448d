package console

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

func TestSecurityHeaders(t *testing.T) {
	h := newTestHost(t, Options{Token: testToken})
	auth := http.Header{"Authorization": {"Bearer " + testToken}}
	for _, tc := range []struct {
		target string
		hdr    http.Header
		code   int
	}{
		{"/", auth, 200},
		{"/app.js", auth, 200},
		{"/diagram.svg", auth, 200},
		{"/api/status", auth, 200},
		{"/api/status", nil, 401},
		{"/nope", auth, 404},
	} {
		resp := do(t, h.cons, "GET", tc.target, tc.hdr, nil)
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.target, resp.StatusCode, tc.code)
		}
		for k, want := range map[string]string{
			"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("GET %s: %s %q, want %q", tc.target, k, got, want)
			}
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", tc.target, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q allows inline code", tc.target, csp)
		}
	}
	// The policy's style hash is that of the <style> the diagram carries
	// (the page inlines the SVG), so the drawing keeps its style.
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(diagramSVG())
	if m == nil {
		t.Fatal("the diagram has no <style>")
	}
	if want := "'sha256-" + styleHash(m[1]) + "'"; !strings.Contains(contentSecurityPolicy, want) {
		t.Errorf("Content-Security-Policy %q lacks the diagram style's hash %s", contentSecurityPolicy, want)
	}
	// The page has no inline script or style the policy would block.
	page, err := web.ReadFile("web/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|style="|\son[a-z]+=`).Match(page) {
		t.Error("index.html has inline script, style or event handler attributes, which the policy blocks")
	}
}

// TestReconnectRateLimit: a second manual reconnect of a server within
// ReconnectInterval is answered 429 with Retry-After and never reaches the
// server; other servers and later requests are not held back.
func TestReconnectRateLimit(t *testing.T) {
	h := newTestHost(t, Options{})
	a := h.add("alpha", 2)
	b := h.add("beta", 2)
	a.rec.Expect(t, wait, conn.Established)
	b.rec.Expect(t, wait, conn.Established)
	post := func(target string, code int, retryAfter string) {
		t.Helper()
		var e apiError
		var out any
		if code == http.StatusTooManyRequests {
			out = &e
		}
		resp := do(t, h.cons, "POST", target, nil, out)
		if resp.StatusCode != code || resp.Header.Get("Retry-After") != retryAfter {
			t.Fatalf("POST %s: %d Retry-After %q %q, want %d Retry-After %q", target, resp.StatusCode,
				resp.Header.Get("Retry-After"), e.Error, code, retryAfter)
		}
	}
	post("/api/servers/alpha/reconnect", 200, "")
	post("/api/servers/alpha/reconnect", 429, "1")
	post("/api/servers/beta/reconnect", 200, "")
	h.clk.Add(ReconnectInterval - time.Millisecond)
	post("/api/servers/alpha/reconnect", 429, "1")
	h.clk.Add(time.Millisecond)
	post("/api/servers/alpha/reconnect", 200, "")
	if n := a.reconnects.Load(); n != 2 {
		t.Errorf("alpha reconnected %d times, want 2 (the refused ones must not reach it)", n)
	}
	post("/api/reconnect", 200, "")
	post("/api/reconnect", 429, "1")
	h.clk.Add(ReconnectInterval)
	post("/api/reconnect", 200, "")
	if n := b.reconnects.Load(); n != 3 {
		t.Errorf("beta reconnected %d times, want 3", n)
	}
}

// TestReloadRateLimit: reloads are limited like reconnects (50 in 1.5 s
// used to reach the host): a second one within ReconnectInterval is 429
// with Retry-After and never reaches the host.
func TestReloadRateLimit(t *testing.T) {
	h := newTestHost(t, Options{})
	codes := map[int]int{}
	for range 50 {
		resp := do(t, h.cons, "POST", "/api/reload", nil, nil)
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("429 with Retry-After %q, want 1", resp.Header.Get("Retry-After"))
		}
	}
	h.mu.Lock()
	n := h.reloads
	h.mu.Unlock()
	if codes[200] != 1 || codes[429] != 49 || n != 1 {
		t.Errorf("50 reloads at once: %v, %d reached the host; want one 200 and 49 429", codes, n)
	}
	h.clk.Add(ReconnectInterval)
	if resp := do(t, h.cons, "POST", "/api/reload", nil, nil); resp.StatusCode != 200 {
		t.Errorf("a reload after the interval: %d", resp.StatusCode)
	}
}

func TestBodyLimit(t *testing.T) {
	h := newTestHost(t, Options{})
	req := httptest.NewRequest("POST", "/api/reload", strings.NewReader(strings.Repeat("x", MaxBodyBytes+1)))
	req.Host = "127.0.0.1:7777"
	rw := httptest.NewRecorder()
	h.cons.ServeHTTP(rw, req)
	if rw.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of %d bytes: %d, want 413", MaxBodyBytes+1, rw.Code)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reloads != 0 {
		t.Errorf("the refused reload reached the host")
	}
}
