package conn

import (
	"context"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
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
		err = g.wireConn().Probe(ctx, transport.MethodDiscover, g.discoverParams())
	default:
		st := transport.StreamableOf(g.transport)
		if st == nil {
			return g.sess.Ping(ctx, nil) // no way to send a probe of our own
		}
		err = transport.DiscoverHTTP(ctx, st, g.protocol, g.discoverParams())
	}
	if transport.Answered(err) {
		return nil // answered, if only to refuse
	}
	return err
}

// probeName names the keep-alive probe in errors.
func (g *generation) probeName() string {
	if newProtocol(g.protocol) {
		return transport.MethodDiscover
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
