package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"
)

// Bounds of what a sandboxed program, which may be hostile, can hold of
// its proxy.
const (
	proxyMaxConns       = 64               // connections at once, tunnels included
	proxyHeaderTimeout  = 10 * time.Second // to send a request's header
	proxyIdleTimeout    = 60 * time.Second // between requests on a connection
	proxyDialTimeout    = 10 * time.Second
	proxyMaxHeaderBytes = 64 << 10
	proxyLoggedRefusals = 64 // distinct destinations logged; later ones are counted
)

// proxy is the only way out of a sandbox with AllowedDomains: an HTTP
// proxy, served on a listener inside the sandbox's network namespace and
// dialling out from the host's, that forwards absolute-form http requests
// and tunnels CONNECT requests to the hosts the Spec allows, by the name
// the client asked for.
type proxy struct {
	spec *Spec
	log  *slog.Logger
	srv  *http.Server
	tr   *http.Transport
	rp   *httputil.ReverseProxy
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
	logged  map[string]bool // destinations whose refusal was logged
	unsaid  int             // refusals not logged
	wg      sync.WaitGroup
}

func newProxy(spec *Spec, log *slog.Logger) *proxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &net.Dialer{Timeout: proxyDialTimeout}
	p := &proxy{spec: spec, log: log, dial: d.DialContext, tunnels: map[net.Conn]struct{}{}, logged: map[string]bool{}}
	// Proxy nil: the host's own proxy settings are not the sandbox's.
	p.tr = &http.Transport{DialContext: p.dial, MaxIdleConns: 16, IdleConnTimeout: proxyIdleTimeout,
		TLSHandshakeTimeout: proxyDialTimeout}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The absolute URL names the host; a Host header that says
			// otherwise does not get to choose.
			pr.Out.Host = ""
		},
		Transport: p.tr,
		ErrorLog:  nil,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "mcpfsm sandbox proxy: "+r.URL.Host+": "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: proxyHeaderTimeout, IdleTimeout: proxyIdleTimeout,
		MaxHeaderBytes: proxyMaxHeaderBytes, ErrorLog: nil}
	return p
}

// serve serves ln until close.
func (p *proxy) serve(ln net.Listener) {
	p.wg.Go(func() { _ = p.srv.Serve(newLimitListener(ln, proxyMaxConns)) })
}

// close stops serving and ends every connection and tunnel; it returns
// once the proxy's goroutines have.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.srv.Close()
	p.wg.Wait()
	p.tr.CloseIdleConnections()
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "mcpfsm sandbox proxy: send http:// requests in absolute form, and https through CONNECT", http.StatusBadRequest)
		return
	}
	host, port := r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = "80"
	}
	if !p.check(w, host, port) {
		return
	}
	p.rp.ServeHTTP(w, r)
}

// connect tunnels a CONNECT request to an allowed host.
func (p *proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || port == "" {
		http.Error(w, "mcpfsm sandbox proxy: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	if !p.check(w, host, port) {
		return
	}
	dst, err := p.dial(r.Context(), "tcp", net.JoinHostPort(host, port))
	if err != nil {
		http.Error(w, "mcpfsm sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	src, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		dst.Close()
		return
	}
	if !p.track(src, dst) {
		return
	}
	_, err = io.WriteString(src, "HTTP/1.1 200 Connection Established\r\n\r\n")
	if err == nil && buf.Reader.Buffered() > 0 {
		_, err = io.CopyN(dst, buf, int64(buf.Reader.Buffered()))
	}
	if err != nil {
		p.untrack(src, dst)
		return
	}
	p.wg.Go(func() {
		_, _ = io.Copy(dst, src)
		p.untrack(src, dst)
	})
	_, _ = io.Copy(src, dst)
	p.untrack(src, dst)
}

// track remembers a tunnel's ends, so that close ends them; false (both
// closed) once the proxy is closing.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

// untrack closes a tunnel's ends.
func (p *proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.tunnels, c)
	}
}

// check answers 403 for a host the Spec does not allow, and logs the
// refusal; it reports whether the host is allowed.
func (p *proxy) check(w http.ResponseWriter, host, port string) bool {
	ok, reason := p.spec.Allows(host)
	if ok {
		return true
	}
	dest := shown(net.JoinHostPort(normalHost(host), port))
	p.refused(dest, reason)
	http.Error(w, fmt.Sprintf("mcpfsm sandbox proxy: the sandbox refused a connection to %s (%s)", dest, reason), http.StatusForbidden)
	return false
}

// shown is a destination the program named, fit for a log line: at most
// 300 bytes, and quoted if it holds anything but printable ASCII (a
// hostile program chooses it).
func shown(dest string) string {
	if len(dest) > 300 {
		dest = dest[:300] + "..."
	}
	for i := 0; i < len(dest); i++ {
		if dest[i] < 0x21 || dest[i] > 0x7e {
			return strconv.Quote(dest)
		}
	}
	return dest
}

// refused logs the first refusal of each destination, up to
// proxyLoggedRefusals of them; a program that tries many cannot flood the
// log.
func (p *proxy) refused(dest, reason string) {
	p.mu.Lock()
	first := !p.logged[dest] && len(p.logged) < proxyLoggedRefusals
	if first {
		p.logged[dest] = true
	} else if !p.logged[dest] {
		p.unsaid++
	}
	last := first && len(p.logged) == proxyLoggedRefusals
	p.mu.Unlock()
	if first {
		p.log.Warn("the sandbox refused a connection to "+dest, "reason", reason)
	}
	if last {
		p.log.Warn(fmt.Sprintf("the sandbox refused connections to %d destinations; refusals of further ones are not logged", proxyLoggedRefusals))
	}
}

// limitListener accepts at most cap(sem) connections at once.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	once sync.Once
	done chan struct{}
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
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
	return &releaseConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener and ends an Accept waiting for a free slot.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type releaseConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
