package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/slots"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [HTTPOptions].
const (
	// DefaultSessionTimeout ends a session that sent no request for 30
	// minutes.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxSessions is the most sessions served at once.
	DefaultMaxSessions = 256
	// DefaultSSERetry is the reconnection time an event stream tells its
	// client: go-sdk's client waits as long by default.
	DefaultSSERetry = time.Second
)

// HTTPOptions bound what the clients of [Front.HTTPHandler] can hold.
type HTTPOptions struct {
	// SessionTimeout ends a client that has sent no request for that long
	// (an abandoned client that never sent DELETE), with its instances.
	// Zero means [DefaultSessionTimeout]; negative, never.
	SessionTimeout time.Duration
	// MaxSessions is the most clients served at once (2025-11-25
	// sessions, and 2026-07-28 subjects): a client that would start one
	// more is answered 503 with Retry-After. Its slot is taken before
	// the session is made, so the bound holds exactly. Zero means
	// [DefaultMaxSessions]; negative, no limit.
	MaxSessions int
	// MaxSessionsPerSubject is the most of them one subject holds at
	// once; the operator, and callers without credentials (a loopback
	// bind), have none. Zero means a quarter of MaxSessions (at least
	// 1); negative, no limit.
	MaxSessionsPerSubject int
	// Subject names the caller of a request: the key of its 2026-07-28
	// client, and its sessions' owner. Nil means the user id of the
	// request's auth.TokenInfo (package access sets it), "" without one.
	Subject func(*http.Request) string
	// Operator reports whether a request is the operator's (the static
	// token's), whom MaxSessionsPerSubject does not bound. Nil means
	// none is.
	Operator func(*http.Request) bool
	// SSERetry is the reconnection time every event stream of the
	// handler starts with (an SSE retry field): how long a client whose
	// stream broke waits before it reconnects. Zero means
	// [DefaultSSERetry]; negative, no retry field.
	SSERetry time.Duration
	// HostChecked says that the access rule in front of the handler
	// checks Host (package access does): the SDK's own check, which on a
	// loopback bind refuses every Host but localhost's, is then off, so
	// that an allowed host behind a reverse proxy is served.
	HostChecked bool
}

// Handler is [Front.HTTPHandler] with the default options.
func (f *Front) Handler() http.Handler { return f.HTTPHandler(HTTPOptions{}) }

// clientKey carries the client a request is for to the SDK's getServer.
type clientKey struct{}

// HTTPHandler returns a Streamable HTTP handler that serves the front to
// its clients: each 2025-11-25 session, and the 2026-07-28 requests of
// each subject, as a client of its own (see [Isolation]), ended after
// o.SessionTimeout idle, at most o.MaxSessions at once. Run [Front.Sync]
// alongside it to keep the tools current. It has no access rule of its
// own: serve it behind one (package access).
func (f *Front) HTTPHandler(o HTTPOptions) http.Handler {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.SessionTimeout < 0 {
		o.SessionTimeout = 0
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerSubject == 0 {
		o.MaxSessionsPerSubject = max(o.MaxSessions/4, 1)
		if o.MaxSessions < 0 {
			o.MaxSessionsPerSubject = -1
		}
	}
	if o.Subject == nil {
		o.Subject = func(r *http.Request) string {
			if info := auth.TokenInfoFromContext(r.Context()); info != nil {
				return info.UserID
			}
			return ""
		}
	}
	if o.SSERetry == 0 {
		o.SSERetry = DefaultSSERetry
	}
	f.slots.SetDefault(o.MaxSessions)
	f.tasks.idle.Store(int64(o.SessionTimeout)) // a running task holds its client (tasks.go)
	// A request with a session id is its session's server's; the SDK
	// asks for a server only to learn the protocol versions.
	template := mcp.NewServer(f.opts.Implementation, nil)
	server := func(r *http.Request) *mcp.Server {
		if c, ok := r.Context().Value(clientKey{}).(*client); ok {
			return c.server
		}
		return template
	}
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout,
		Logger: f.opts.Logger, DisableLocalhostProtection: o.HostChecked})
	// go-sdk serves 2026-07-28 over HTTP only from a stateless handler,
	// and the classic versions with sessions only from a stateful one:
	// each request goes to the handler of its era.
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true,
		Logger: f.opts.Logger, DisableLocalhostProtection: o.HostChecked})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.SSERetry > 0 {
			w = &retryWriter{ResponseWriter: w, retry: o.SSERetry}
		}
		subject, perSubject := o.Subject(r), o.MaxSessionsPerSubject
		if subject == "" || o.Operator != nil && o.Operator(r) {
			perSubject = -1
		}
		caller := tokenCaller(auth.TokenInfoFromContext(r.Context()))
		if o.Operator == nil || !o.Operator(r) {
			f.keepCallerToken(subject, r)
		}
		if modernRequest(r) {
			c, err := f.subjectClient(subject, caller, o.MaxSessions, perSubject)
			if err != nil {
				f.refuse(w, err)
				return
			}
			defer c.hold(o.SessionTimeout)()
			stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			stateful.ServeHTTP(w, r)
			return
		}
		// A request without a session id starts a session: its slot is
		// taken first, so that no more than the bound are ever made.
		release, err := f.slots.Session(subject, o.MaxSessions, perSubject)
		if err != nil {
			f.refuse(w, err)
			return
		}
		caller.Subject = subject
		c := f.newClient(sessionClient, caller)
		c.release = release
		f.add(c)
		stateful.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
		f.settle(c)
	})
}

// refuse answers a request past a bound with 503 and Retry-After.
func (f *Front) refuse(w http.ResponseWriter, err error) {
	var bound *slots.Bound
	if !errors.As(err, &bound) {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	f.opts.Logger.Warn("new MCP client refused: " + err.Error())
	w.Header().Set("Retry-After", "60")
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// settle keeps c as a session client once the request that made it is
// served: its session initialized, and c ends with it. A request that
// made no session (a probe for another protocol version, a refusal) gets
// its slot back at once.
func (f *Front) settle(c *client) {
	for ss := range c.server.Sessions() {
		if ss.InitializeParams() == nil {
			continue
		}
		c.adopt(ss)
		f.wg.Go(func() {
			_ = ss.Wait()
			f.drop(c)
		})
		return
	}
	f.drop(c)
}

// add makes c one of the front's clients.
func (f *Front) add(c *client) {
	f.mu.Lock()
	f.clients[c] = struct{}{}
	f.mu.Unlock()
}

// subjectClient is the client of the 2026-07-28 requests of subject,
// made on its first request.
func (f *Front) subjectClient(subject string, caller authz.Caller, max, perSubject int) (*client, error) {
	f.mu.Lock()
	c := f.subjects[subject]
	f.mu.Unlock()
	if c != nil {
		return c, nil
	}
	release, err := f.slots.Session(subject, max, perSubject)
	if err != nil {
		return nil, err
	}
	caller.Subject = subject
	made := f.newClient(subjectClient, caller)
	made.release = release
	f.mu.Lock()
	if c = f.subjects[subject]; c == nil {
		c = made
		f.subjects[subject] = c
		f.clients[c] = struct{}{}
	}
	f.mu.Unlock()
	if c != made {
		made.close() // a concurrent first request made it first
	}
	return c, nil
}

// hold marks a request of c in progress; the returned function ends it,
// and the last one arms c's end after timeout without another (zero:
// never). A 2025-11-25 client ends with its session instead.
func (c *client) hold(timeout time.Duration) func() {
	c.mu.Lock()
	c.busy++
	c.idleSeq++
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.busy--
		if c.busy > 0 || timeout <= 0 || c.closed {
			return
		}
		c.idleSeq++
		seq := c.idleSeq
		c.idle = c.f.opts.Clock.AfterFunc(timeout, func() {
			c.mu.Lock()
			stale := seq != c.idleSeq || c.busy > 0
			c.mu.Unlock()
			if !stale {
				c.f.drop(c)
			}
		})
	}
}

// modernRequest reports whether r is of protocol 2026-07-28 or later: it
// says so in its MCP-Protocol-Version header, or, without a session and
// without the header, in its body (a server/discover probe, or a
// protocol version in the request's _meta).
func modernRequest(r *http.Request) bool {
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" {
		return v >= conn.StatelessProtocolVersion
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxPeek {
		return false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	if msg.Method == "server/discover" {
		return true
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= conn.StatelessProtocolVersion
}

// maxPeek bounds the body modernRequest reads to tell the era: a larger
// one goes to the classic handler, which reads it all.
const maxPeek = 1 << 20

// retryWriter starts an event stream (a 200 response of Content-Type
// text/event-stream) with an SSE retry field, an event of its own that
// carries no data, so a client dispatches nothing for it and only learns
// how long to wait before it reconnects a broken stream.
type retryWriter struct {
	http.ResponseWriter
	retry   time.Duration
	written bool
}

// WriteHeader writes the header, then the retry field if the response
// is an event stream.
func (w *retryWriter) WriteHeader(code int) {
	if w.written {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.written = true
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		_, _ = fmt.Fprintf(w.ResponseWriter, "retry: %d\n\n", w.retry.Milliseconds())
	}
}

// Write writes b, after the header (and retry field) if they are not
// written yet.
func (w *retryWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes what is written to the client.
func (w *retryWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap is the writer underneath, for http.ResponseController.
func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
