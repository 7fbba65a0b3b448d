package front

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
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
	server := func(*http.Request) *mcp.Server { return f.server }
	h := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout, Logger: f.opts.Logger})
	// go-sdk serves 2026-07-28 over HTTP only from a stateless handler,
	// and the classic versions with sessions only from a stateful one:
	// each request goes to the handler of its era, over one server.
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true, Logger: f.opts.Logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if modernRequest(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		// A request without a session id starts a session.
		if o.MaxSessions >= 0 && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && f.sessions() >= o.MaxSessions {
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
		if ss.InitializeParams() != nil && !modern(ss) { // a 2026-07-28 request holds no session
			n++
		}
	}
	return n
}

// modernRequest reports whether r is of protocol 2026-07-28 or later: it
// says so in its MCP-Protocol-Version header, or, without a session and
// without the header, in its body (a server/discover probe, or a
// protocol version in the request's _meta).
func modernRequest(r *http.Request) bool {
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" {
		return v >= modernVersion
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
	return v >= modernVersion
}

// modernVersion is the first protocol version without sessions.
const modernVersion = conn.StatelessProtocolVersion

// maxPeek bounds the body modernRequest reads to tell the era: a larger
// one goes to the classic handler, which reads it all.
const maxPeek = 1 << 20
