package front

import (
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [HTTPOptions].
const (
	// DefaultSessionTimeout ends a session that sent no request for 30
	// minutes.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxSessions is the most sessions served at once.
	DefaultMaxSessions = 256
)

// HTTPOptions bound what the clients of [Front.HTTPHandler] can hold.
type HTTPOptions struct {
	// SessionTimeout ends a session that has sent no request for that
	// long (an abandoned client that never sent DELETE). Zero means
	// [DefaultSessionTimeout]; negative, never.
	SessionTimeout time.Duration
	// MaxSessions is the most sessions served at once: a client that would
	// start one more is answered 503 with Retry-After. Zero means
	// [DefaultMaxSessions]; negative, no limit.
	MaxSessions int
}

// Handler is [Front.HTTPHandler] with the default options.
func (f *Front) Handler() http.Handler { return f.HTTPHandler(HTTPOptions{}) }

// HTTPHandler returns a Streamable HTTP handler that serves the front to
// its clients, each in its own session, ended after o.SessionTimeout idle
// and at most o.MaxSessions at once. Run [Front.Sync] alongside it to
// keep the tools current. It has no access rule of its own: serve it
// behind one (package access).
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
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout, Logger: f.opts.Logger})
	if o.MaxSessions < 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request without a session id starts a session.
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && f.sessions() >= o.MaxSessions {
			f.opts.Logger.Warn("new MCP session refused: the session limit is reached", "max_sessions", o.MaxSessions)
			w.Header().Set("Retry-After", "60")
			http.Error(w, fmt.Sprintf("mcpfsm serves at most %d sessions at once (-max-sessions); try again later", o.MaxSessions),
				http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sessions counts the sessions connected now. A request that never
// initialized (such as a probe for another protocol version) holds its
// session only while it is served, and is not counted.
func (f *Front) sessions() int {
	n := 0
	for ss := range f.server.Sessions() {
		if ss.InitializeParams() != nil {
			n++
		}
	}
	return n
}
