package conn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultHTTPKeepAlive is the keep-alive interval of a Supervisor whose
// Transport is an [HTTP] and whose Config.KeepAlive is zero. Nothing else
// notices a Streamable HTTP server that is down or frozen while no call is
// made: the SDK retries its event stream for about 13 to 26 s before it
// gives up on a refused connection, and waits for ever on a frozen one.
// With it, a server that refuses or resets the connection is a loss at
// the next ping (within 10 s), and a frozen one within two intervals.
const DefaultHTTPKeepAlive = 10 * time.Second

// HTTP is a [Transport] for a Streamable HTTP server. Every generation gets
// a new mcp.StreamableClientTransport and so a new MCP session: the SDK
// retries its event streams itself but never re-initializes a lost
// session, so a session the server no longer knows (it restarted) ends the
// generation and the supervisor reconnects.
//
// Liveness: a Supervisor pings an HTTP server every [DefaultHTTPKeepAlive]
// unless Config.KeepAlive says otherwise, and a request of any kind (a
// call, a ping) that finds the connection refused or reset ends the
// generation: the server is lost, not just the call failed.
type HTTP struct {
	// Endpoint is the server's MCP URL, such as "https://host/mcp".
	Endpoint string
	// Client is the HTTP client to use. Nil means http.DefaultClient.
	Client *http.Client
	// Header is added to every request to the Endpoint's origin (its
	// scheme, host and port), such as a static "Authorization: Bearer ..."
	// or an API key. The headers the SDK sets itself (content type,
	// session and protocol version, and Authorization when OAuthHandler
	// has a token) take precedence. A request that a redirect sends to any
	// other origin, an https Endpoint redirected to http included, goes
	// without these headers and without Authorization.
	Header http.Header
	// OAuthHandler, if set, authorizes the requests (package
	// github.com/modelcontextprotocol/go-sdk/auth has handlers for the
	// authorization code and client credentials flows). One handler serves
	// every generation, so the tokens it holds survive a reconnect and a
	// reconnect does not log in again.
	OAuthHandler auth.OAuthHandler
}

// Streamable returns an [HTTP] transport for endpoint.
func Streamable(endpoint string) *HTTP { return &HTTP{Endpoint: endpoint} }

// Open returns a fresh SDK transport for one generation. Its HTTP client
// also keeps the server's last error answer, so that a failure or loss can
// say what the server said ([HTTPError]) and honour its Retry-After.
func (h *HTTP) Open(context.Context) (mcp.Transport, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	return transport.NewHTTP(h.Endpoint, h.Client, h.Header, h.OAuthHandler), nil
}

// defaultKeepAlive is the keep-alive of a Supervisor of h whose
// Config.KeepAlive is zero.
func (h *HTTP) defaultKeepAlive() time.Duration { return DefaultHTTPKeepAlive }

func (h *HTTP) validate() error {
	u, err := url.Parse(h.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("HTTP.Endpoint %q is not an http(s) URL with a host: use the server's full MCP URL, such as https://host/mcp", redact.URL(h.Endpoint))
	}
	for k, vs := range h.Header {
		if k == "" || strings.ContainsAny(k, " :\t\r\n") {
			return fmt.Errorf("HTTP.Header has the invalid name %q: use a header name such as Authorization", k)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("HTTP.Header[%q] has a line break in its value: remove it", k)
			}
		}
	}
	return nil
}
