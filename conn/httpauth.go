package conn

import (
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the SDK's Streamable HTTP transport with a record of
// how the server answered, so that a refused authorization can be told
// from an outage.
type httpTransport struct {
	*mcp.StreamableClientTransport
	watch *authWatch
	rec   *responseRecorder // the last error answer, see HTTPError
}

// authWatch records the status of the latest HTTP answer.
type authWatch struct{ status atomic.Int32 }

// refused returns the status of the latest answer if it refused
// authorization (401 or 403), else 0.
func (w *authWatch) refused() int {
	if st := int(w.status.Load()); st == http.StatusUnauthorized || st == http.StatusForbidden {
		return st
	}
	return 0
}

// watchTransport records every answer's status.
type watchTransport struct {
	next  http.RoundTripper
	watch *authWatch
}

func (t *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		t.watch.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}
