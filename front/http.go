package front

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler returns a Streamable HTTP handler that serves the front to any
// number of clients, each in its own session. Run [Front.Sync] alongside
// it to keep the tools current.
func (f *Front) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server }, nil)
}
