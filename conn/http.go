package conn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP is a [Transport] for a Streamable HTTP server. Every generation gets
// a new mcp.StreamableClientTransport and so a new MCP session: the SDK
// retries its event streams itself but never re-initializes a lost
// session, so a session the server no longer knows (it restarted) ends the
// generation and the supervisor reconnects.
type HTTP struct {
	// Endpoint is the server's MCP URL, such as "https://host/mcp".
	Endpoint string
	// Client is the HTTP client to use. Nil means http.DefaultClient.
	Client *http.Client
	// Header is added to every request, such as a static
	// "Authorization: Bearer ..." or an API key. The headers the SDK sets
	// itself (content type, session and protocol version, and
	// Authorization when OAuthHandler has a token) take precedence.
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

// Open returns a fresh SDK transport for one generation.
func (h *HTTP) Open(context.Context) (mcp.Transport, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	watch := &authWatch{}
	hc := *client
	hc.Transport = &headerTransport{next: client.Transport, header: h.Header, watch: watch}
	return &httpTransport{
		StreamableClientTransport: &mcp.StreamableClientTransport{Endpoint: h.Endpoint, HTTPClient: &hc, OAuthHandler: h.OAuthHandler},
		watch:                     watch,
	}, nil
}

func (h *HTTP) validate() error {
	u, err := url.Parse(h.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("HTTP.Endpoint %q is not an http(s) URL with a host: use the server's full MCP URL, such as https://host/mcp", h.Endpoint)
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
