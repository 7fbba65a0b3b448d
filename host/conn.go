package host

import (
	"context"
	"io"
	"net/http"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/httpheader"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnConfig returns the [conn.Config] of s, a server's own settings:
// Name, Transport ([Transport]), Reconnect, FailOnStartupError, the
// timeouts, MaxConcurrentCalls and, with includeTools or excludeTools,
// the Filter ([config.Server.ToolAllowed]). A host adds what it shares
// (Registry and, if it wants them, Logger, OnTransition and Clock). A
// stdio server's stderr goes to stderr (nil discards it).
func ConnConfig(s config.Server, stderr io.Writer) conn.Config {
	p := s.Reconnect
	c := conn.Config{
		Name:               s.Name,
		Transport:          Transport(s, stderr),
		Reconnect:          &p,
		FailOnStartupError: s.FailOnStartupError,
		ConnectTimeout:     s.ConnectTimeout,
		CallTimeout:        s.CallTimeout,
		CloseTimeout:       s.CloseTimeout,
		KeepAlive:          s.KeepAlive,
		MaxConcurrentCalls: s.MaxConcurrentCalls,
	}
	if len(s.IncludeTools) > 0 || len(s.ExcludeTools) > 0 {
		c.Filter = s.ToolAllowed
	}
	return c
}

// Transport returns the [conn.Transport] of s: [conn.Command] for stdio,
// a [conn.HTTP] for http, and the SDK's SSE client for sse. Headers are
// added to every HTTP request to the origin of s.URL (conn.HTTP.Header for
// http, a wrapped http.Client for sse), and to no request a redirect sends
// elsewhere. A stdio server's stderr goes to stderr (nil discards it), and
// its Sandbox is the transport's.
func Transport(s config.Server, stderr io.Writer) conn.Transport {
	switch s.Type {
	case config.TypeHTTP:
		return &conn.HTTP{Endpoint: s.URL, Header: s.Headers.Clone()}
	case config.TypeSSE:
		client, endpoint := sseClient(s), s.URL
		return conn.TransportFunc(func(context.Context) (mcp.Transport, error) {
			return &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: client}, nil
		})
	}
	t := conn.Command(s.Command, s.Args...)
	t.Env = s.Env
	t.Dir = s.Cwd
	t.Stderr = stderr
	if s.Sandbox != nil {
		sb := *s.Sandbox // the supervisor's own, whatever becomes of s
		t.Launcher = &sb
	}
	return t
}

// sseClient is the SSE transport's client: nil (the SDK's default)
// without headers.
func sseClient(s config.Server) *http.Client {
	if len(s.Headers) == 0 {
		return nil
	}
	return &http.Client{Transport: httpheader.New(s.URL, s.Headers, http.DefaultTransport)}
}
