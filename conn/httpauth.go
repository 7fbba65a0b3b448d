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

// headerTransport adds the configured headers to every request and
// records every answer's status.
type headerTransport struct {
	next   http.RoundTripper
	header http.Header
	watch  *authWatch
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		// A RoundTripper must not change the caller's request.
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			if _, set := req.Header[http.CanonicalHeaderKey(k)]; !set {
				req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
			}
		}
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil {
		t.watch.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}
