package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire is where a generation learns what reached its server: whether a
// call's request may have been written (so a retry could execute it twice),
// and whether the server died on the server/discover probe (so the
// supervisor falls back to the classic handshake). Every transport but
// Streamable HTTP gets a Wire around it, whose connection is a WireConn;
// Streamable HTTP keeps the SDK's own connection, whose session updates an
// outside wrapper cannot forward, and gets a tracing round tripper
// instead.

// The methods of protocol 2026-07-28 that the wire watches:
// MethodDiscover is its probe, MethodSubscriptionsListen its stream of
// notifications, and notificationListenAcked the server's first message
// on that stream, once the subscriptions are in place.
const (
	MethodDiscover            = "server/discover"
	MethodSubscriptionsListen = "subscriptions/listen"
	notificationListenAcked   = "notifications/subscriptions/acknowledged"
	notificationToolsChanged  = "notifications/tools/list_changed"
)

// Wire wraps a non-HTTP transport so that its connection is a WireConn the
// generation can query. The generation keeps the unwrapped transport for
// its Terminator.
type Wire struct {
	mcp.Transport
	broken func(error) // told when the server ends a subscriptions/listen stream
	ended  func(*Wire) // told once when the connection ends; may be nil
	tools  func()      // told of each tools/list_changed, as it is read; may be nil
	ack    *ListenAck
	conn   atomic.Pointer[WireConn]
}

// Wired prepares t for a generation: a Wire around anything but Streamable
// HTTP, whose HTTP client gets a marking round tripper instead (on a copy:
// the caller's client is not modified), and then the Wire is nil. Either
// way a subscriptions/listen stream that ends while the client wants it is
// reported to broken, and its acknowledgement to ack.
//
// ended, if set, is told once when the wire's connection ends; tools, if
// set, of each notifications/tools/list_changed as the wire reads it,
// before any message read after it reaches the SDK (whose handler runs on
// a goroutine of its own, racing the answers read after the notification).
func Wired(t mcp.Transport, broken func(error), ended func(*Wire), tools func(), ack *ListenAck) (mcp.Transport, *Wire) {
	if st := StreamableOf(t); st != nil {
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
	wt := &Wire{Transport: t, broken: broken, ended: ended, tools: tools, ack: ack}
	return wt, wt
}

// StreamableOf returns the SDK's Streamable HTTP transport t is or embeds
// (an [HTTP]'s), or nil.
func StreamableOf(t mcp.Transport) *mcp.StreamableClientTransport {
	switch st := t.(type) {
	case *mcp.StreamableClientTransport:
		return st
	case *HTTP:
		return st.StreamableClientTransport
	}
	return nil
}

// Connect connects the wrapped transport and wraps its connection in a
// WireConn. The SDK calls it once, from Client.Connect.
func (t *Wire) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w := &WireConn{Connection: c, probes: map[jsonrpc.ID]chan *jsonrpc.Response{}, listens: map[jsonrpc.ID]bool{}, broken: t.broken, tools: t.tools, ack: t.ack}
	if t.ended != nil {
		w.ended = func() { t.ended(t) }
	}
	t.conn.Store(w)
	return w, nil
}

// Conn returns the wire's connection, nil until the SDK has connected it.
func (t *Wire) Conn() *WireConn { return t.conn.Load() }

// WireConn records, for a generation, what was written and read.
type WireConn struct {
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
	ack           *ListenAck
	ended         func() // told when a Read fails or the SDK closes the connection; may be nil
	tools         func() // told of each tools/list_changed read; may be nil
	endOnce       sync.Once
}

// reportEnd tells, once, that the session ended: its read loop stopped
// or the SDK closed the connection.
func (c *WireConn) reportEnd() {
	c.endOnce.Do(func() {
		if c.ended != nil {
			c.ended()
		}
	})
}

// Close tells of the end, then closes the connection.
func (c *WireConn) Close() error {
	c.reportEnd()
	return c.Connection.Close()
}

// Write marks a call's context as written (see Mark), records the
// server/discover and subscriptions/listen requests it sends, and passes
// msg on.
func (c *WireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
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
		case MethodDiscover:
			c.mu.Lock()
			if !c.discoverSent {
				c.discoverSent, c.discoverID = true, req.ID
			}
			c.mu.Unlock()
		case MethodSubscriptionsListen:
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
func (c *WireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
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
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == notificationToolsChanged && c.tools != nil {
				c.tools()
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
			c.broken(fmt.Errorf("the %s stream was ended by the server", MethodSubscriptionsListen))
		}
		if !probe {
			return msg, nil
		}
		ch <- resp // buffered
	}
}

// Ended reports whether a Read has failed: the connection ended.
func (c *WireConn) Ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr != nil
}

// DiedOnDiscover reports whether the connection ended after a
// server/discover request was written and before anything answered it:
// the server could not stand the probe.
func (c *WireConn) DiedOnDiscover() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.discoverSent && !c.discoverReply && c.readErr != nil
}

// Probe sends a request of the supervisor's own (with an id the SDK never
// uses) and waits for its answer, which never reaches the SDK. Any answer,
// an error included, proves the server reads and answers.
func (c *WireConn) Probe(ctx context.Context, method string, params any) error {
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

// Mark travels in a call's context down to the wire, which sets it before
// the first byte of the call's request can leave: a call whose mark is
// unset was never sent and may be retried without risk.
type Mark struct{ written atomic.Bool }

// Written reports whether the call's request may have been written.
func (m *Mark) Written() bool { return m.written.Load() }

type markKey struct{}

// WithMark returns ctx carrying m, for the wire to set.
func WithMark(ctx context.Context, m *Mark) context.Context {
	return context.WithValue(ctx, markKey{}, m)
}

func markWritten(ctx context.Context) {
	if m, ok := ctx.Value(markKey{}).(*Mark); ok {
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
	ack    *ListenAck
}

func (rt markingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if m, ok := req.Context().Value(markKey{}).(*Mark); ok {
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { m.written.Store(true) }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	resp, err := rt.base.RoundTrip(req)
	if err == nil && rt.broken != nil && req.Header.Get("Mcp-Method") == MethodSubscriptionsListen {
		rt.ack.markSent()
		resp.Body = &listenBody{ReadCloser: resp.Body, ctx: req.Context(), broken: rt.broken, ack: rt.ack}
	}
	return resp, err
}

// ListenAck records whether a generation sent subscriptions/listen and
// whether the server acknowledged it. Nil-safe.
type ListenAck struct {
	sent atomic.Bool
	once sync.Once
	ch   chan struct{} // closed at the first acknowledgement
}

// NewListenAck returns a record of nothing sent.
func NewListenAck() *ListenAck { return &ListenAck{ch: make(chan struct{})} }

// Sent reports whether subscriptions/listen was sent.
func (a *ListenAck) Sent() bool { return a.sent.Load() }

// Acked returns a channel closed once the server acknowledged it.
func (a *ListenAck) Acked() <-chan struct{} { return a.ch }

func (a *ListenAck) markSent() {
	if a != nil {
		a.sent.Store(true)
	}
}

func (a *ListenAck) acked() {
	if a != nil {
		a.once.Do(func() { close(a.ch) })
	}
}

// listenBody is the response stream of a subscriptions/listen request.
type listenBody struct {
	io.ReadCloser
	ctx    context.Context
	broken func(error)
	ack    *ListenAck
	tail   []byte // the end of the previous read, for a marker split across reads
	done   bool   // the completion result arrived
	once   sync.Once
}

var (
	resultMarker = []byte(`"result"`)
	ackMarker    = []byte(notificationListenAcked)
)

func (b *listenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done && n > 0 {
		buf := append(b.tail, p[:n]...)
		b.done = bytes.Contains(buf, resultMarker)
		if bytes.Contains(buf, ackMarker) {
			b.ack.acked()
		}
		b.tail = append(b.tail[:0], buf[max(0, len(buf)-len(ackMarker)):]...)
	}
	if err != nil && b.ctx.Err() == nil {
		// The SDK never sends the request again, so after either end no
		// list change or resource update would arrive.
		how := "closed without its completion result"
		if b.done {
			how = "was ended by the server"
		}
		b.once.Do(func() { b.broken(fmt.Errorf("the %s stream %s: %w", MethodSubscriptionsListen, how, err)) })
	}
	return n, err
}
