package access

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// ErrNeedAuth is returned by [Rule.Listen] for an address that is not
// loopback when the rule has neither a token nor OAuth.
var ErrNeedAuth = errors.New("a non-loopback address needs authentication")

// Listen opens a TCP listener on addr (HOST:PORT) for the rule's surface.
// Without a token or OAuth it serves loopback only: ":8080" or
// "0.0.0.0:8080" listen on every interface and are refused, and the check
// is made on the address actually bound, so a name resolving elsewhere is
// refused too. The listener accepts at most Config.MaxConns connections
// at once (DefaultMaxConns by default); further clients wait in the
// kernel's backlog until one closes.
func (r *Rule) Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("access: address %q: %w; use HOST:PORT, e.g. 127.0.0.1:8080", addr, err)
	}
	if !r.Authenticated() && !loopbackName(host) {
		return nil, needAuth(addr, host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !r.Authenticated() && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, needAuth(addr, tcp.IP.String())
	}
	n := r.cfg.MaxConns
	if n == 0 {
		n = DefaultMaxConns
	}
	if n < 0 {
		return ln, nil
	}
	return limitListener(ln, n), nil
}

func needAuth(addr, bound string) error {
	return fmt.Errorf("access: refusing to serve on %q (%s is not loopback): %w; set %s or -token-file, or listen on 127.0.0.1:PORT",
		addr, bound, ErrNeedAuth, EnvToken)
}

// loopbackName reports whether a host name or address is loopback.
func loopbackName(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// limitListener returns a listener accepting at most n connections at
// once (golang.org/x/net/netutil.LimitListener, without the module).
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
