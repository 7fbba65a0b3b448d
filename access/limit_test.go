package access

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// capped serves a mux on a listener of rule: /healthz (uncapped), /hold
// (answers its header, then holds the connection until the test ends)
// and /ok.
type capped struct {
	addr    string
	ln      *limiter
	release chan struct{}
}

func serveCapped(t *testing.T, cfg Config) *capped {
	t.Helper()
	rule := mustRule(t, cfg)
	ln, err := rule.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &capped{addr: ln.Addr().String(), ln: ln.(*limiter), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-c.release:
		case <-r.Context().Done():
		}
	})
	srv := NewServer(mux, ServerOptions{Uncapped: []string{"/healthz"}})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		close(c.release)
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

// dial opens a raw connection from the loopback address from (""
// for the default).
func (c *capped) dial(t *testing.T, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	conn, err := d.Dial("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// get sends GET path on conn (kept alive) and reads the answer's head
// and, unless it streams, its body, within 2 s.
func get(t *testing.T, conn net.Conn, br *bufio.Reader, path string) *http.Response {
	t.Helper()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	defer conn.SetDeadline(time.Time{})
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: no answer within 2 s: %v", path, err)
	}
	if path != "/hold" {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp
}

// awaitIdle waits, at most 2 s, until n connections within the cap are
// idle between requests: net/http marks a connection idle after it wrote
// the response, which the client may have read before.
func (c *capped) awaitIdle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		c.ln.mu.Lock()
		idle := 0
		for lc := range c.ln.in {
			if lc.state == http.StateIdle {
				idle++
			}
		}
		c.ln.mu.Unlock()
		if idle == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle within 2 s, want %d", idle, n)
		}
		runtime.Gosched()
	}
}

// hold takes one connection slot with a request that never ends.
func (c *capped) hold(t *testing.T, from string) {
	t.Helper()
	conn := c.dial(t, from)
	if resp := get(t, conn, bufio.NewReader(conn), "/hold"); resp.StatusCode != 200 {
		t.Fatalf("/hold: %d", resp.StatusCode)
	}
}

// TestPastTheCapAnswers503: with every slot held by a request in flight,
// a new connection is answered 503 with Retry-After at once (it used to
// wait in the kernel's backlog), and /healthz is still served on it.
func TestPastTheCapAnswers503(t *testing.T) {
	c := serveCapped(t, Config{MaxConns: 2, MaxConnsPerIP: -1})
	c.hold(t, "")
	c.hold(t, "")
	conn := c.dial(t, "")
	start := time.Now()
	resp := get(t, conn, bufio.NewReader(conn), "/ok")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("past the cap: %d Retry-After %q, want 503 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the 503 took %v", took)
	}
	if !resp.Close {
		t.Error("the 503 keeps the connection open (no Connection: close)")
	}
	conn = c.dial(t, "")
	if resp := get(t, conn, bufio.NewReader(conn), "/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz past the cap: %d, want 200", resp.StatusCode)
	}
	if in, _ := c.ln.counts(); in != 2 {
		t.Errorf("%d connections within the cap, want 2", in)
	}
}

// TestIdleConnectionsMakeRoom: at the cap, a new connection closes the
// one kept alive unused for longest instead of being refused.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	c := serveCapped(t, Config{MaxConns: 2, MaxConnsPerIP: -1})
	idle := make([]net.Conn, 2)
	for i := range idle {
		idle[i] = c.dial(t, "")
		if resp := get(t, idle[i], bufio.NewReader(idle[i]), "/ok"); resp.StatusCode != 200 {
			t.Fatalf("keep-alive request %d: %d", i, resp.StatusCode)
		}
		c.awaitIdle(t, i+1)
	}
	for i := range 3 {
		conn := c.dial(t, "")
		if resp := get(t, conn, bufio.NewReader(conn), "/ok"); resp.StatusCode != 200 {
			t.Errorf("new connection %d with the cap full of idle ones: %d, want 200", i, resp.StatusCode)
		}
		c.awaitIdle(t, 2)
	}
	// The first idle connection was closed first.
	idle[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the oldest idle connection: read %v, want EOF (closed)", err)
	}
}

// TestSilentConnectionsMakeRoom: connections that never send a request
// give way at the cap once SilentAfter has passed.
func TestSilentConnectionsMakeRoom(t *testing.T) {
	clk := clock.NewMock()
	c := serveCapped(t, Config{MaxConns: 2, MaxConnsPerIP: -1, Clock: clk})
	c.dial(t, "")
	c.dial(t, "")
	conn := c.dial(t, "") // accepted after the two (the backlog is FIFO)
	if resp := get(t, conn, bufio.NewReader(conn), "/ok"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("with two fresh silent connections: %d, want 503 (they are not yet silent for long)", resp.StatusCode)
	}
	clk.Add(SilentAfter)
	conn = c.dial(t, "")
	if resp := get(t, conn, bufio.NewReader(conn), "/ok"); resp.StatusCode != 200 {
		t.Errorf("after SilentAfter: %d, want 200", resp.StatusCode)
	}
}

// TestPerIPCap: one address cannot take every slot; another still gets
// one.
func TestPerIPCap(t *testing.T) {
	c := serveCapped(t, Config{MaxConns: 4, MaxConnsPerIP: 2})
	c.hold(t, "127.0.0.1")
	c.hold(t, "127.0.0.1")
	conn := c.dial(t, "127.0.0.1")
	if resp := get(t, conn, bufio.NewReader(conn), "/ok"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a third connection of 127.0.0.1 with a cap of 2: %d, want 503", resp.StatusCode)
	}
	conn = c.dial(t, "127.0.0.2")
	if resp := get(t, conn, bufio.NewReader(conn), "/ok"); resp.StatusCode != 200 {
		t.Errorf("a connection of 127.0.0.2: %d, want 200", resp.StatusCode)
	}
}

// TestOverflowIsBounded: past the caps, connections live at most
// OverflowTimeout, and at most MaxConns of them are open: the oldest
// silent one gives way to a new one.
func TestOverflowIsBounded(t *testing.T) {
	c := serveCapped(t, Config{MaxConns: 2, MaxConnsPerIP: -1})
	c.hold(t, "")
	c.hold(t, "")
	silent := []net.Conn{c.dial(t, ""), c.dial(t, "")}
	conn := c.dial(t, "")
	if resp := get(t, conn, bufio.NewReader(conn), "/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz with the overflow full of silent connections: %d, want 200", resp.StatusCode)
	}
	silent[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := silent[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the oldest silent connection past the cap: %v, want closed", err)
	}
	start := time.Now()
	silent[1].SetReadDeadline(time.Now().Add(OverflowTimeout + 2*time.Second))
	_, err := silent[1].Read(make([]byte, 1))
	if took := time.Since(start); err == nil || took > OverflowTimeout+time.Second {
		t.Errorf("a silent connection past the cap: %v after %v, want closed within %v", err, took, OverflowTimeout)
	}
}

// TestHealthzUnder1000IdleSockets is the lock-out: 500 connections that
// sent one /healthz each and stay kept alive, and 500 that send nothing,
// against the default caps (512, 256 per address). A liveness probe on a
// new connection is answered at once, every time.
func TestHealthzUnder1000IdleSockets(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 sockets")
	}
	c := serveCapped(t, Config{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	for i := range 1000 {
		wg.Go(func() {
			conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			if i%2 == 0 {
				fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
					resp.Body.Close()
				}
				conn.SetReadDeadline(time.Time{})
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	var worst time.Duration
	for range 20 {
		start := time.Now()
		conn := c.dial(t, "")
		resp := get(t, conn, bufio.NewReader(conn), "/healthz")
		conn.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/healthz under 1,000 idle sockets: %d", resp.StatusCode)
		}
		worst = max(worst, time.Since(start))
	}
	if worst > time.Second {
		t.Errorf("/healthz under 1,000 idle sockets took up to %v", worst)
	}
	t.Logf("/healthz under 1,000 idle sockets: worst of 20 probes %v", worst)
}
