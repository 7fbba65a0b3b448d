package front

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoPeer: a supervised server sent a request (elicitation, sampling)
// that no front client can answer: none is connected, several are (over
// HTTP the front cannot tell which one made the call), or the one
// connected did not declare the capability.
var ErrNoPeer = errors.New("no front client can answer this request")

// ClientOptions returns client options that forward the supervised
// servers' requests to the front's client: elicitation/create and
// sampling/createMessage go to the one connected client, if it declared
// the capability. Pass them as conn.Config.Client of every supervisor.
// Otherwise the request fails with an error matching [ErrNoPeer], which
// the server sees as a JSON-RPC error.
func (f *Front) ClientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ss, err := f.peer("elicitation", func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil })
			if err != nil {
				return nil, err
			}
			return ss.Elicit(ctx, req.Params)
		},
		//lint:ignore SA1019 sampling is deprecated upstream (SEP-2577) but still forwarded.
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			ss, err := f.peer("sampling", hasSampling)
			if err != nil {
				return nil, err
			}
			//lint:ignore SA1019 see above.
			return ss.CreateMessage(ctx, req.Params)
		},
	}
}

// ClientOptionsFor is [Front.ClientOptions] for the supervisor of
// server, which also relays the server's notifications/resources/updated
// to the front clients subscribed to the resource. Pass it as
// conn.Config.Client of that supervisor when the front serves a catalog.
func (f *Front) ClientOptionsFor(server string) *mcp.ClientOptions {
	o := f.ClientOptions()
	o.ResourceUpdatedHandler = func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req.Params != nil {
			f.relayUpdate(ctx, server, req.Params.URI)
		}
	}
	//lint:ignore SA1019 logging is deprecated upstream (SEP-2577) but still relayed.
	o.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
		f.relayLog(ctx, server, req.Params)
	}
	return o
}

// peer is the one connected front client, if it declared capability.
func (f *Front) peer(capability string, has func(*mcp.ClientCapabilities) bool) (*mcp.ServerSession, error) {
	var only *mcp.ServerSession
	n := 0
	for ss := range f.server.Sessions() {
		only = ss
		n++
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: no client is connected to mcpfsm", ErrNoPeer)
	case n > 1:
		return nil, fmt.Errorf("%w: %d clients are connected to mcpfsm and it cannot tell which one made the call", ErrNoPeer, n)
	}
	p := only.InitializeParams()
	if p == nil || p.Capabilities == nil || !has(p.Capabilities) {
		return nil, fmt.Errorf("%w: the client connected to mcpfsm does not support %s", ErrNoPeer, capability)
	}
	return only, nil
}

//lint:ignore SA1019 sampling is deprecated upstream (SEP-2577) but still forwarded.
func hasSampling(c *mcp.ClientCapabilities) bool { return c.Sampling != nil }
