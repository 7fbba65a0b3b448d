package conn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

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
}

// Streamable returns an [HTTP] transport for endpoint.
func Streamable(endpoint string) *HTTP { return &HTTP{Endpoint: endpoint} }

// Open returns a fresh SDK transport for one generation.
func (h *HTTP) Open(context.Context) (mcp.Transport, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	return &mcp.StreamableClientTransport{Endpoint: h.Endpoint, HTTPClient: h.Client}, nil
}

func (h *HTTP) validate() error {
	u, err := url.Parse(h.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("HTTP.Endpoint %q is not an http(s) URL with a host: use the server's full MCP URL, such as https://host/mcp", h.Endpoint)
	}
	return nil
}
