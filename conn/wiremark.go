package conn

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// wireMark travels in a call's context down to the wire, which sets it
// before the first byte of the call's request can leave: a call whose mark
// is unset was never sent and may be retried without risk.
type wireMark struct{ written atomic.Bool }

type wireMarkKey struct{}

func withWireMark(ctx context.Context, m *wireMark) context.Context {
	return context.WithValue(ctx, wireMarkKey{}, m)
}

func markWritten(ctx context.Context) {
	if m, ok := ctx.Value(wireMarkKey{}).(*wireMark); ok {
		m.written.Store(true)
	}
}

// markingRoundTripper sets the wire mark of a Streamable HTTP request once
// it has a connection to write on: a request that failed before that (the
// server refused the connection) never reached the server. It also
// watches the response stream of subscriptions/listen (protocol
// 2026-07-28), through which list changes and resource updates arrive:
// one that ends while the client still wants it, without its completion
// result (the connection broke) or with it (the server ended it), is
// reported to broken.
type markingRoundTripper struct {
	base   http.RoundTripper
	broken func(error)
	ack    *listenAck
}

func (rt markingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if m, ok := req.Context().Value(wireMarkKey{}).(*wireMark); ok {
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { m.written.Store(true) }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	resp, err := rt.base.RoundTrip(req)
	if err == nil && rt.broken != nil && req.Header.Get("Mcp-Method") == methodSubscriptionsListen {
		rt.ack.markSent()
		resp.Body = &listenBody{ReadCloser: resp.Body, ctx: req.Context(), broken: rt.broken, ack: rt.ack}
	}
	return resp, err
}
