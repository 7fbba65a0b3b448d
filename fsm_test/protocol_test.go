package fsm_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// discoverKiller serves a go-sdk server over in-process pipes, but each
// connection dies, like an older stdio server exiting on an unknown
// method, when it receives server/discover.
type discoverKiller struct {
	srv *mcp.Server

	mu     sync.Mutex
	opens  int
	killed int
	open   []net.Conn
}

func (k *discoverKiller) Open(ctx context.Context) (mcp.Transport, error) {
	c1, c2 := net.Pipe()
	k.mu.Lock()
	k.opens++
	k.open = append(k.open, c2)
	k.mu.Unlock()
	if _, err := k.srv.Connect(ctx, &mcp.IOTransport{Reader: &dieOn{k: k, c: c2}, Writer: c2}, nil); err != nil {
		return nil, err
	}
	return &mcp.IOTransport{Reader: c1, Writer: c1}, nil
}

// dieOn is the server's reader: it closes the connection on server/discover.
type dieOn struct {
	k *discoverKiller
	c net.Conn
}

func (d *dieOn) Read(p []byte) (int, error) {
	n, err := d.c.Read(p)
	if bytes.Contains(p[:n], []byte(`"server/discover"`)) {
		d.k.mu.Lock()
		d.k.killed++
		d.k.mu.Unlock()
		_ = d.c.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

func (d *dieOn) Close() error { return d.c.Close() }

func (k *discoverKiller) counts() (opens, killed int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.opens, k.killed
}

func (k *discoverKiller) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.open {
		_ = c.Close()
	}
}

// A server that dies on the server/discover probe is connected within the
// same attempt with the classic handshake: no failed attempt, no budget
// spent; the supervisor remembers it, so the next generation goes straight
// to initialize; Status and the connected line name the protocol.
func TestServerDyingOnDiscoverIsLearnedWithinTheAttempt(t *testing.T) {
	k := &discoverKiller{srv: mcp.NewServer(&mcp.Implementation{Name: "old"}, nil)}
	defer k.close()
	k.srv.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("a ok"), nil })
	h := newHarnessOn(t, conntest.NewServer(), nil, withPolicy(small), func(_ *harness, c *conn.Config) {
		c.Transport = conn.TransportFunc(k.Open)
	})
	tr := h.expect(conn.Established)[0]
	if tr.From != conn.Connecting || tr.Attempt != 0 || tr.Protocol != conn.ClassicProtocolVersion {
		t.Errorf("first transition %+v: want connecting -> established, attempt 0, protocol %s", tr, conn.ClassicProtocolVersion)
	}
	if opens, killed := k.counts(); opens != 2 || killed != 1 {
		t.Errorf("opens %d, killed on discover %d: want 2 and 1", opens, killed)
	}
	if st := h.sup.Status(); st.Protocol != conn.ClassicProtocolVersion || st.Attempt != 0 || st.LastErr != nil {
		t.Errorf("Status protocol %q attempt %d LastErr %v: want %s, 0, nil", st.Protocol, st.Attempt, st.LastErr, conn.ClassicProtocolVersion)
	}
	warn := h.rec.WaitLog(t, waitLimit, slog.LevelWarn, "server closed the connection on the server/discover probe")
	if warn.Msg == "" {
		t.Fatal("no warning about the learned handshake")
	}
	var protocol []string
	for _, r := range h.rec.Records(slog.LevelInfo) {
		if r.Msg == "connected and registered tools" {
			protocol = append(protocol, r.Attrs["protocol"])
		}
	}
	if !slices.Equal(protocol, []string{conn.ClassicProtocolVersion}) {
		t.Errorf("protocol attribute of the connected lines: %q, want [%s]", protocol, conn.ClassicProtocolVersion)
	}
	// The next generation uses the classic handshake at once.
	reconnectsWithLearntProtocol(t, h, k, "killed on discover")
}

// A pinned version is never changed: a supervisor pinned to 2026-07-28
// against the same server fails its attempts.
func TestPinnedVersionIsNotLearned(t *testing.T) {
	k := &discoverKiller{srv: mcp.NewServer(&mcp.Implementation{Name: "old"}, nil)}
	defer k.close()
	h := newHarnessOn(t, conntest.NewServer(), nil, withPolicy(small), func(_ *harness, c *conn.Config) {
		c.Transport = conn.TransportFunc(k.Open)
		c.ProtocolVersion = conn.DefaultProtocolVersion
	})
	h.expect(conn.FailedRetrying)
	if opens, killed := k.counts(); opens != 1 || killed != 1 {
		t.Errorf("opens %d, killed %d: want 1 and 1", opens, killed)
	}
}

// classicRefuser serves a go-sdk server over in-process pipes that
// answers the classic initialize handshake with a JSON-RPC error, as a
// server of protocol 2026-07-28 only does; refuseAll also refuses
// server/discover.
type classicRefuser struct {
	srv       *mcp.Server
	refuseAll bool

	mu      sync.Mutex
	opens   int
	refused int
	open    []net.Conn
}

func newClassicRefuser(refuseAll bool) *classicRefuser {
	k := &classicRefuser{srv: mcp.NewServer(&mcp.Implementation{Name: "modern"}, nil), refuseAll: refuseAll}
	k.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" || (k.refuseAll && method == "server/discover") {
				k.mu.Lock()
				k.refused++
				k.mu.Unlock()
				return nil, &jsonrpc.Error{Code: -32022, Message: "Unsupported protocol version"}
			}
			return next(ctx, method, req)
		}
	})
	k.srv.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("a ok"), nil })
	return k
}

func (k *classicRefuser) Open(ctx context.Context) (mcp.Transport, error) {
	c1, c2 := net.Pipe()
	k.mu.Lock()
	k.opens++
	k.open = append(k.open, c2)
	k.mu.Unlock()
	if _, err := k.srv.Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}, nil); err != nil {
		return nil, err
	}
	return &mcp.IOTransport{Reader: c1, Writer: c1}, nil
}

func (k *classicRefuser) counts() (opens, refused int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.opens, k.refused
}

func (k *classicRefuser) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.open {
		_ = c.Close()
	}
}

// With PreferClassic, a server that refuses the classic initialize
// handshake (one of protocol 2026-07-28 only) is connected within the
// same attempt with server/discover: no failed attempt, no budget spent;
// the supervisor remembers it, so the next generation asks for the
// stateless protocol at once; Status names the protocol.
func TestServerRefusingClassicHandshakeIsLearnedWithinTheAttempt(t *testing.T) {
	k := newClassicRefuser(false)
	defer k.close()
	h := newHarnessOn(t, conntest.NewServer(), nil, withPolicy(small), func(_ *harness, c *conn.Config) {
		c.Transport = conn.TransportFunc(k.Open)
		c.PreferClassic = true
	})
	tr := h.expect(conn.Established)[0]
	if tr.From != conn.Connecting || tr.Attempt != 0 || tr.Protocol != conn.StatelessProtocolVersion {
		t.Errorf("first transition %+v: want connecting -> established, attempt 0, protocol %s", tr, conn.StatelessProtocolVersion)
	}
	if opens, refused := k.counts(); opens != 2 || refused != 1 {
		t.Errorf("opens %d, initialize refused %d: want 2 and 1", opens, refused)
	}
	if st := h.sup.Status(); st.Protocol != conn.StatelessProtocolVersion || st.Attempt != 0 || st.LastErr != nil {
		t.Errorf("Status protocol %q attempt %d LastErr %v: want %s, 0, nil", st.Protocol, st.Attempt, st.LastErr, conn.StatelessProtocolVersion)
	}
	if warn := h.rec.WaitLog(t, waitLimit, slog.LevelWarn, "server refused the classic initialize handshake"); warn.Msg == "" {
		t.Fatal("no warning about the learned protocol")
	}
	// The next generation asks for the stateless protocol at once.
	reconnectsWithLearntProtocol(t, h, k, "initialize refused")
}

// learningServer is a test server that counts the transports it opened
// and the handshakes it refused, and can drop its connection.
type learningServer interface {
	close()
	counts() (opens, refused int)
}

// reconnectsWithLearntProtocol checks that h's supervisor, established
// after learning a protocol from k within its first attempt (two
// transports, one refused handshake), serves a call, and after the
// connection drops reconnects on one transport with what it learnt: no
// second refusal and no failed attempt. refused names k's refusals in
// the error.
func reconnectsWithLearntProtocol(t *testing.T, h *harness, k learningServer, refused string) {
	t.Helper()
	if res, err := h.reg.Call(context.Background(), "mcp__fx__a", nil); err != nil || resultText(t, res) != "a ok" {
		t.Fatalf("call: %v", err)
	}
	k.close()
	lost := h.expect(conn.LostReconnecting)[0]
	h.advance(lost.Delay)
	h.expect(conn.Connecting, conn.Established)
	if opens, n := k.counts(); opens != 3 || n != 1 {
		t.Errorf("after a reconnect: opens %d, %s %d: want 3 and 1", opens, refused, n)
	}
	if got, want := conntest.Path(h.rec.Seen()), "connecting -connected-> established -connection-lost-> lost-reconnecting -backoff-elapsed-> connecting -connected-> established"; got != want {
		t.Errorf("path %s, want %s", got, want)
	}
	for _, l := range h.rec.Logs(slog.LevelWarn) {
		if strings.HasPrefix(l.Msg, "connection attempt failed") {
			t.Errorf("unexpected warning %q", l.Msg)
		}
	}
}

// With PreferClassic, a server that answers the classic handshake gets
// it (one transport, no probe); one that refuses both the handshake and
// server/discover fails the attempt with the handshake's refusal, and
// nothing is learnt: the next attempt asks for the classic one again.
func TestPreferClassicKeepsClassicServersAndLearnsNothingFromARefusal(t *testing.T) {
	t.Run("classic", func(t *testing.T) {
		h := newHarnessOn(t, conntest.NewServer(), []string{"a"}, withPolicy(small), func(_ *harness, c *conn.Config) {
			c.PreferClassic = true
		})
		if tr := h.expect(conn.Established)[0]; tr.Protocol != conn.ClassicProtocolVersion {
			t.Errorf("protocol %q, want %s", tr.Protocol, conn.ClassicProtocolVersion)
		}
	})
	t.Run("refuses both", func(t *testing.T) {
		k := newClassicRefuser(true)
		defer k.close()
		h := newHarnessOn(t, conntest.NewServer(), nil, withPolicy(small), func(_ *harness, c *conn.Config) {
			c.Transport = conn.TransportFunc(k.Open)
			c.PreferClassic = true
		})
		tr := h.expect(conn.FailedRetrying)[0]
		if tr.Err == nil || !strings.Contains(tr.Err.Error(), "Unsupported protocol version") {
			t.Errorf("the attempt's error %v: want the handshake's refusal", tr.Err)
		}
		// initialize; then, on the second transport, server/discover and
		// the SDK's own fallback to initialize.
		if opens, refused := k.counts(); opens != 2 || refused != 3 {
			t.Errorf("opens %d, refused %d: want 2 and 3 (initialize, then discover and initialize)", opens, refused)
		}
		h.advance(tr.Delay)
		h.expect(conn.Connecting, conn.FailedRetrying)
		if opens, refused := k.counts(); opens != 4 || refused != 6 {
			t.Errorf("after a second attempt: opens %d, refused %d: want 4 and 6 (the classic handshake asked again)", opens, refused)
		}
	})
}
