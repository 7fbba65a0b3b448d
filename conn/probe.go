package conn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeLive is one keep-alive probe of an established generation. On the
// classic protocol it is a ping. Protocol 2026-07-28 has no ping and no
// session, so there it is a server/discover request, the cheapest request
// the protocol has, sent beside the SDK: through the wired connection on
// stdio and in-process transports (its answer never reaches the SDK), and
// as a request of its own to the endpoint on Streamable HTTP. Any answer,
// a JSON-RPC error included, proves that the server reads and answers; no
// answer within the interval, a connection refused or reset, or an HTTP
// 5xx is a failed probe, which ends the generation (keepalive.go).
func (g *generation) probeLive(ctx context.Context) error {
	var err error
	switch {
	case !newProtocol(g.protocol):
		err = g.sess.Ping(ctx, nil)
	case g.wireConn() != nil:
		err = g.wireConn().probe(ctx, methodDiscover, g.discoverParams())
	default:
		st := streamable(g.transport)
		if st == nil {
			return g.sess.Ping(ctx, nil) // no way to send a probe of our own
		}
		err = g.discoverHTTP(ctx, st)
	}
	if answered(err) {
		return nil // answered, if only to refuse
	}
	return err
}

// answered reports whether err is the server's JSON-RPC error answer: the
// server read the request and replied. The SDK also reports its own
// transport failures as JSON-RPC errors, with codes of its own; those are
// no answer.
func answered(err error) bool {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || connectionGone(err) {
		return false
	}
	switch rpc.Code {
	case codeUnknown, codeClientClosing, codeServerClosing, codeRejected:
		return false
	}
	return true
}

// The codes the SDK's JSON-RPC layer uses for its own failures.
const (
	codeUnknown       = -32001
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// probeName names the keep-alive probe in errors.
func (g *generation) probeName() string {
	if newProtocol(g.protocol) {
		return methodDiscover
	}
	return "ping"
}

func (g *generation) discoverParams() map[string]any {
	impl := defaultImplementation()
	if g.sup.cfg.Implementation != nil {
		impl = *g.sup.cfg.Implementation
	}
	return map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    g.protocol,
		mcp.MetaKeyClientInfo:         &impl,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
}

// discoverHTTP posts a server/discover request to the endpoint with the
// generation's HTTP client (so with its headers).
func (g *generation) discoverHTTP(ctx context.Context, st *mcp.StreamableClientTransport) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "mcpfsm-probe", "method": methodDiscover, "params": g.discoverParams()})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", g.protocol)
	req.Header.Set("Mcp-Method", methodDiscover)
	c := st.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s answered HTTP %d", methodDiscover, resp.StatusCode)
	}
	return nil
}
