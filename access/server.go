package access

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ServerOptions are the limits of [NewServer]; a zero field takes the
// default named beside it.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading a request's header
	// (DefaultReadHeaderTimeout).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included
	// (DefaultReadTimeout): a client trickling its body is cut off then.
	// It does not limit a response: net/http clears the read deadline once
	// the body has been read, so event streams live on.
	ReadTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (DefaultMaxHeaderBytes).
	MaxHeaderBytes int
	// TLSConfig, when set, is the server's TLS configuration ([TLSConfig]);
	// serve with srv.ServeTLS(ln, "", "").
	TLSConfig *tls.Config
	// Uncapped are the paths served on a connection past the listener's
	// caps too (a liveness probe's, such as /healthz); every other request
	// on such a connection is answered 503 with Retry-After.
	Uncapped []string
}

// Defaults of [ServerOptions].
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
)

// NewServer returns an http.Server for h with the limits of opts.
//
// Served on a listener of [Rule.Listen], it enforces the listener's
// connection caps: a connection past one (Config.MaxConns,
// Config.MaxConnsPerIP) is answered at once, one request only, with 503
// and Retry-After, or with h for a path of opts.Uncapped, and is closed
// within OverflowTimeout.
//
// It sets no WriteTimeout: both surfaces stream responses for as long as a
// client listens (the MCP GET stream and SSE answers, the console's
// /api/events), and a write deadline would cut them; a per-request deadline
// cannot be told apart in advance from the handler's side. A client that
// stops reading holds its connection instead, which the listener's
// connection bound (Config.MaxConns) contains.
func NewServer(h http.Handler, opts ServerOptions) *http.Server {
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	maxHeader := opts.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxHeaderBytes
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: or(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       or(opts.ReadTimeout, DefaultReadTimeout),
		IdleTimeout:       or(opts.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    maxHeader,
		TLSConfig:         opts.TLSConfig,
	}
	withLimits(srv, opts.Uncapped)
	return srv
}

// TLSConfig loads a certificate (PEM, the chain after the leaf) and its
// private key for ServerOptions.TLSConfig, with TLS 1.2 at least. Errors
// name the flags -tls-cert and -tls-key.
func TLSConfig(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, errors.New("access: TLS needs -tls-cert FILE and -tls-key FILE")
	case certFile == "":
		return nil, fmt.Errorf("access: -tls-key %s given without -tls-cert; give both", keyFile)
	case keyFile == "":
		return nil, fmt.Errorf("access: -tls-cert %s given without -tls-key; give both", certFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("access: -tls-cert %s / -tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// LimitBody returns h with request bodies bounded to n bytes: a request
// declaring a longer Content-Length is answered 413 at once, and reading
// past n from a body of unknown length fails (http.MaxBytesReader, which
// also closes the connection afterwards).
func LimitBody(h http.Handler, n int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, n))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, n)
		}
		h.ServeHTTP(w, r)
	})
}
