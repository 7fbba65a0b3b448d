package conn

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire is where a generation learns what reached its server: whether a
// call's request may have been written (so a retry could execute it twice),
// and whether the server died on the server/discover probe (so the
// supervisor falls back to the classic handshake). Every transport but
// Streamable HTTP gets a wireConn around its mcp.Connection; Streamable
// HTTP keeps the SDK's own connection, whose session updates an outside
// wrapper cannot forward, and gets a tracing round tripper instead.

// methodDiscover is the probe of protocol 2026-07-28.
const methodDiscover = "server/discover"

// wireTransport wraps a non-HTTP transport so that its connection is a
// wireConn the generation can query. The generation keeps the unwrapped
// transport for its Terminator.
type wireTransport struct {
	mcp.Transport
	broken func(error)          // told when the server ends a subscriptions/listen stream
	ended  func(*wireTransport) // told once when the connection ends; may be nil
	ack    *listenAck
	conn   atomic.Pointer[wireConn]
}

func (t *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w := &wireConn{Connection: c, probes: map[jsonrpc.ID]chan *jsonrpc.Response{}, listens: map[jsonrpc.ID]bool{}, broken: t.broken, ack: t.ack}
	if t.ended != nil {
		w.ended = func() { t.ended(t) }
	}
	t.conn.Store(w)
	return w, nil
}

// wireConn records, for a generation, what was written and read.
type wireConn struct {
	mcp.Connection

	mu            sync.Mutex
	discoverID    jsonrpc.ID // the first server/discover request written
	discoverSent  bool
	discoverReply bool  // a response to it was read
	readErr       error // the first Read error: the connection ended
	probes        map[jsonrpc.ID]chan *jsonrpc.Response
	probeSeq      uint64
	listens       map[jsonrpc.ID]bool // subscriptions/listen requests written
	broken        func(error)
	ack           *listenAck
	ended         func() // told when a Read fails or the SDK closes the connection; may be nil
	endOnce       sync.Once
}

// reportEnd tells, once, that the session ended: its read loop stopped
// or the SDK closed the connection.
func (c *wireConn) reportEnd() {
	c.endOnce.Do(func() {
		if c.ended != nil {
			c.ended()
		}
	})
}

// Close tells of the end, then closes the connection.
func (c *wireConn) Close() error {
	c.reportEnd()
	return c.Connection.Close()
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/cancelled" {
		// The client ends a listen itself (Unsubscribe, Close): its
		// end is no news.
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				delete(c.listens, id)
				c.mu.Unlock()
			}
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		markWritten(ctx)
		switch req.Method {
		case methodDiscover:
			c.mu.Lock()
			if !c.discoverSent {
				c.discoverSent, c.discoverID = true, req.ID
			}
			c.mu.Unlock()
		case methodSubscriptionsListen:
			c.mu.Lock()
			c.listens[req.ID] = true
			c.mu.Unlock()
			c.ack.markSent()
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Read passes every message on but the answers to the supervisor's own
// probes, which it hands to their waiters.
func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.mu.Lock()
			if c.readErr == nil {
				c.readErr = err
			}
			for id, ch := range c.probes {
				close(ch)
				delete(c.probes, id)
			}
			c.mu.Unlock()
			c.reportEnd()
			return nil, err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == notificationListenAcked {
				c.ack.acked()
			}
			return msg, nil
		}
		c.mu.Lock()
		ch, probe := c.probes[resp.ID]
		delete(c.probes, resp.ID)
		if c.discoverSent && resp.ID == c.discoverID {
			c.discoverReply = true
		}
		listen := c.listens[resp.ID]
		delete(c.listens, resp.ID)
		c.mu.Unlock()
		if listen && c.broken != nil {
			// The SDK never sends it again: no list change or resource
			// update would arrive after this. (When the client itself
			// ends it, the generation is already shutting down.)
			c.broken(fmt.Errorf("the %s stream was ended by the server", methodSubscriptionsListen))
		}
		if !probe {
			return msg, nil
		}
		ch <- resp // buffered
	}
}

// diedOnDiscover reports whether the connection ended after a
// server/discover request was written and before anything answered it:
// the server could not stand the probe.
func (c *wireConn) diedOnDiscover() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.discoverSent && !c.discoverReply && c.readErr != nil
}

// probe sends a request of the supervisor's own (with an id the SDK never
// uses) and waits for its answer, which never reaches the SDK. Any answer,
// an error included, proves the server reads and answers.
func (c *wireConn) probe(ctx context.Context, method string, params any) error {
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", mcp.ErrConnectionClosed, err)
	}
	c.probeSeq++
	id, err := jsonrpc.MakeID(fmt.Sprintf("mcpfsm-probe-%d", c.probeSeq))
	if err != nil {
		c.mu.Unlock()
		return err
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.probes[id] = ch
	c.mu.Unlock()
	drop := func() {
		c.mu.Lock()
		delete(c.probes, id)
		c.mu.Unlock()
	}
	raw, err := json.Marshal(params)
	if err != nil {
		drop()
		return err
	}
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		drop()
		return err
	}
	select {
	case _, ok := <-ch:
		if !ok {
			return mcp.ErrConnectionClosed
		}
		return nil
	case <-ctx.Done():
		drop()
		return ctx.Err()
	}
}

// wire prepares t for a generation: a wireTransport around anything but
// Streamable HTTP, whose HTTP client gets a marking round tripper instead
// (on a copy: the caller's client is not modified). Either way a
// subscriptions/listen stream that ends while the client wants it is
// reported to broken.
//
// ended, if set, is told once when the wire's connection ends.
func wire(t mcp.Transport, broken func(error), ended func(*wireTransport), ack *listenAck) (mcp.Transport, *wireTransport) {
	if st := streamable(t); st != nil {
		c := http.DefaultClient
		if st.HTTPClient != nil {
			c = st.HTTPClient
		}
		cp := *c
		base := cp.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		cp.Transport = markingRoundTripper{base: base, broken: broken, ack: ack}
		st.HTTPClient = &cp
		return t, nil
	}
	wt := &wireTransport{Transport: t, broken: broken, ended: ended, ack: ack}
	return wt, wt
}

// streamable returns the SDK's Streamable HTTP transport t is or embeds
// (conn.HTTP's), or nil.
func streamable(t mcp.Transport) *mcp.StreamableClientTransport {
	switch st := t.(type) {
	case *mcp.StreamableClientTransport:
		return st
	case *httpTransport:
		return st.StreamableClientTransport
	}
	return nil
}
