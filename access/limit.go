package access

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Bounds of connections past a cap.
const (
	// OverflowTimeout bounds a connection past a cap: it has this long to
	// send its one request and read the answer (503 with Retry-After, or
	// an uncapped path such as /healthz) before it is closed.
	OverflowTimeout = 2 * time.Second
	// SilentAfter is how long a connection may stay open without sending
	// a request before, at the cap, it can be closed to make room.
	SilentAfter = time.Second
	// RetryAfter is the Retry-After of the 503 past a cap, in seconds.
	RetryAfter = 1
)

// limiter is a listener holding at most max connections at once, and at
// most perIP of one remote address. Connections past a cap are still
// accepted, marked over, and bounded: [NewServer]'s handler answers them
// 503 with Retry-After at once (or serves an uncapped path), and each
// lives at most OverflowTimeout. At most max of them are open; past that
// the oldest one still silent is closed, or the new one is.
//
// At the cap, room is made before a new connection is refused: first the
// connection idle for longest between two requests (keep-alive) is
// closed, then the oldest that has sent nothing for SilentAfter. A client
// holding connections it does not use cannot lock others out.
type limiter struct {
	net.Listener
	max, perIP int
	clk        clock.Clock

	mu   sync.Mutex
	in   map[*limitedConn]struct{} // within the caps
	over map[*limitedConn]struct{} // past a cap
	byIP map[string]int            // of in
	seq  uint64                    // orders idle transitions
}

// limit wraps ln in the rule's connection caps (none when MaxConns < 0).
func (r *Rule) limit(ln net.Listener) net.Listener {
	n := r.cfg.MaxConns
	if n == 0 {
		n = DefaultMaxConns
	}
	if n < 0 {
		return ln
	}
	perIP := r.cfg.MaxConnsPerIP
	if perIP == 0 {
		perIP = max(1, n/2)
	}
	if perIP < 0 || perIP > n {
		perIP = n
	}
	return &limiter{Listener: ln, max: n, perIP: perIP, clk: r.clk,
		in: map[*limitedConn]struct{}{}, over: map[*limitedConn]struct{}{}, byIP: map[string]int{}}
}

// limitedConn is a connection of a limiter.
type limitedConn struct {
	net.Conn
	l        *limiter
	ip       string
	accepted time.Time
	over     bool      // past a cap: one answer, then closed
	deadline time.Time // with over: the latest deadline allowed

	// under l.mu
	state    http.ConnState
	idleSeq  uint64
	released bool
}

func (l *limiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l, ip: remoteIP(c), accepted: l.clk.Now(), state: http.StateNew}
		victims, ok := l.admit(lc)
		for _, v := range victims {
			v.Close()
		}
		if !ok {
			c.Close()
			continue
		}
		if lc.over {
			lc.deadline = time.Now().Add(OverflowTimeout)
			_ = c.SetDeadline(lc.deadline)
		}
		return lc, nil
	}
}

// admit places lc within the caps or past them, and returns the
// connections to close to make room; false: lc itself must be closed.
func (l *limiter) admit(lc *limitedConn) (victims []*limitedConn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := func(only string) {
		if v := l.victim(l.in, true, only); v != nil {
			l.releaseLocked(v)
			victims = append(victims, v)
		}
	}
	if l.byIP[lc.ip] >= l.perIP {
		room(lc.ip) // the address's own unused connections make room
	} else if len(l.in) >= l.max {
		room("")
	}
	if l.byIP[lc.ip] < l.perIP {
		if len(l.in) < l.max {
			l.in[lc] = struct{}{}
			l.byIP[lc.ip]++
			return victims, true
		}
	}
	lc.over = true
	if len(l.over) >= l.max {
		v := l.victim(l.over, false, "")
		if v == nil {
			return victims, false
		}
		l.releaseLocked(v)
		victims = append(victims, v)
	}
	l.over[lc] = struct{}{}
	return victims, true
}

// victim picks the connection of set (of address ip, unless "") to close
// for room: the one idle longest (with idle), else the oldest that has
// sent nothing for SilentAfter; nil if none may be closed.
func (l *limiter) victim(set map[*limitedConn]struct{}, idle bool, ip string) *limitedConn {
	var best, silent *limitedConn
	now := l.clk.Now()
	for c := range set {
		switch {
		case ip != "" && c.ip != ip:
		case idle && c.state == http.StateIdle:
			if best == nil || c.idleSeq < best.idleSeq {
				best = c
			}
		case c.state == http.StateNew && now.Sub(c.accepted) >= SilentAfter:
			if silent == nil || c.accepted.Before(silent.accepted) {
				silent = c
			}
		}
	}
	if best != nil {
		return best
	}
	if silent == nil && !idle {
		// Past the caps every connection is short-lived: the oldest silent
		// one gives way however young.
		for c := range set {
			if c.state == http.StateNew && (silent == nil || c.accepted.Before(silent.accepted)) {
				silent = c
			}
		}
	}
	return silent
}

func (l *limiter) releaseLocked(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	if _, ok := l.in[c]; ok {
		delete(l.in, c)
		if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
			delete(l.byIP, c.ip)
		}
	}
	delete(l.over, c)
}

func (l *limiter) setState(c *limitedConn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.state = st
	if st == http.StateIdle {
		l.seq++
		c.idleSeq = l.seq
	}
	if st == http.StateClosed || st == http.StateHijacked {
		l.releaseLocked(c)
	}
}

// counts is how many connections are within the caps and past them.
func (l *limiter) counts() (in, over int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.in), len(l.over)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// The deadlines of a connection past a cap never pass its bound, whatever
// net/http asks.
func (c *limitedConn) clamp(t time.Time) time.Time {
	if c.over && (t.IsZero() || t.After(c.deadline)) {
		return c.deadline
	}
	return t
}

func (c *limitedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

func (c *limitedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

// remoteIP is the address of c's peer without its port ("" for a unix
// socket's, which all count as one).
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// limitedOf returns the limiter's connection under c (a TLS connection
// over one included), or nil.
func limitedOf(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

type connKey struct{}

// withLimits sets srv's hooks for the connections of a limiter and wraps
// its handler: a request on a connection past a cap is answered 503 with
// Retry-After and Connection: close, unless its path is one of uncapped.
func withLimits(srv *http.Server, uncapped []string) {
	prevState := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if lc := limitedOf(c); lc != nil {
			lc.l.setState(lc, st)
		}
		if prevState != nil {
			prevState(c, st)
		}
	}
	prevCtx := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		if lc := limitedOf(c); lc != nil {
			ctx = context.WithValue(ctx, connKey{}, lc)
		}
		return ctx
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, _ := r.Context().Value(connKey{}).(*limitedConn)
		if lc == nil || !lc.over {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		for _, p := range uncapped {
			if r.URL.Path == p {
				h.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		writeError(w, http.StatusServiceUnavailable, "too many connections: the server holds as many as it may (-max-conns, -max-conns-per-ip); retry after "+
			strconv.Itoa(RetryAfter)+" s")
	})
}
