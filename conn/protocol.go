package conn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClassicProtocolVersion is the newest MCP protocol version of the classic
// initialize handshake, which every server of every SDK answers. A
// Supervisor falls back to it, for the rest of its life, once its server
// has died on the server/discover probe of [DefaultProtocolVersion].
const ClassicProtocolVersion = "2025-11-25"

// StatelessProtocolVersion is the first MCP protocol version without the
// initialize handshake and sessions: a client probes a server with
// server/discover, and every request carries its version. Versions
// compare as strings; the package's DefaultProtocolVersion is it, and
// package front tells the eras of its clients apart by it.
const StatelessProtocolVersion = "2026-07-28"

// newProtocol reports whether version is StatelessProtocolVersion or
// later: no initialize, no session, no ping.
func newProtocol(version string) bool { return version >= StatelessProtocolVersion }

// requestVersion is the protocol version the next attempt asks for, and
// what the attempt may learn: whether a server dying on its probe teaches
// the supervisor to use the classic handshake (only when no version is
// pinned or preferred), and whether a server refusing the classic
// handshake teaches it to use the stateless protocol (only when
// Config.PreferClassic asks for the classic one). The host's handlers
// (Config.Roots, Client's elicitation and sampling handlers) do not
// change it: on 2026-07-28 a server asks for input in a call's result
// (input_required, SEP-2322), and the SDK's client answers each round
// through those same handlers and sends the call again.
func (s *Supervisor) requestVersion() (version string, learnClassic, learnModern bool) {
	switch {
	case s.cfg.ProtocolVersion != "":
		return s.cfg.ProtocolVersion, false, false
	case s.cfg.PreferClassic && s.modern.Load():
		return DefaultProtocolVersion, false, false
	case s.cfg.PreferClassic:
		return ClassicProtocolVersion, false, true
	case s.classic.Load():
		return ClassicProtocolVersion, false, false
	}
	return DefaultProtocolVersion, true, false
}

// handshake connects a fresh client over t at the version the supervisor
// asks for. A server that closes the connection on the server/discover
// probe (some older stdio servers exit on unknown methods) is not a failed
// attempt: the supervisor learns to use the classic handshake from now on,
// waits for the first transport's process to be gone, opens a second one
// and initializes it, all within this attempt and its ConnectTimeout, so
// the learning spends no outage budget and never has two processes alive.
// The reverse, with Config.PreferClassic, is learnt the same way from a
// server that refuses the classic initialize (see modernHandshake).
func (g *generation) handshake(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, error) {
	s := g.sup
	version, learn, modern := s.requestVersion()
	sess, err := g.connectWire(ctx, t, version)
	if err == nil {
		return sess, nil
	}
	if modern {
		return g.modernHandshake(ctx, t, err)
	}
	if !learn {
		return nil, err
	}
	w := g.wireConn()
	if w == nil || !w.DiedOnDiscover() || ctx.Err() != nil {
		return nil, err
	}
	// Until the classic handshake succeeds, the server may as well have
	// died at start whatever it was asked (a missing token, a bad
	// command): that is no protocol matter, and is not announced as one;
	// its exit is the attempt's cause. Later attempts use the classic
	// handshake all the same (every server answers it), one process each.
	s.classic.Store(true)
	t2, err2 := g.reopen(ctx, t, "waiting for the server that died on "+transport.MethodDiscover+" to exit")
	if err2 != nil {
		return nil, err2
	}
	sess, err2 = g.connectWire(ctx, t2, ClassicProtocolVersion)
	if err2 != nil {
		s.cfg.Logger.Debug(fmt.Sprintf("the server died on the %s probe of protocol %s and on the %s handshake too: it stops at start; later attempts skip the probe",
			transport.MethodDiscover, version, ClassicProtocolVersion),
			"server", s.cfg.Name, "generation", g.id)
		return nil, err2
	}
	s.cfg.Logger.Warn(fmt.Sprintf("server closed the connection on the %s probe of protocol %s but answered the classic initialize handshake (%s): using it from now on",
		transport.MethodDiscover, version, ClassicProtocolVersion),
		"server", s.cfg.Name, "generation", g.id, "err", redact.Error(err))
	return sess, nil
}

// modernHandshake follows a classic initialize that failed with err,
// when Config.PreferClassic asked for it: a server that answered it with
// a JSON-RPC error (not a refused credential, not a transport failure)
// is alive and speaks JSON-RPC, and may speak only the stateless
// protocol. Within the same attempt, once the first transport's process
// (if any) is gone, a second transport is probed with server/discover at
// DefaultProtocolVersion; if the server answers it, the supervisor asks
// for that protocol from now on. Otherwise the attempt fails with err,
// the classic handshake's refusal, and nothing is learnt.
func (g *generation) modernHandshake(ctx context.Context, t mcp.Transport, err error) (*mcp.ClientSession, error) {
	s := g.sup
	var refusal *jsonrpc.Error
	if !errors.As(err, &refusal) || g.authRefused() != 0 || ctx.Err() != nil {
		return nil, err
	}
	t2, err2 := g.reopen(ctx, t, "waiting for the server that refused the classic initialize handshake to exit")
	if err2 != nil {
		return nil, err2
	}
	sess, err2 := g.connectWire(ctx, t2, DefaultProtocolVersion)
	if err2 == nil && !newProtocol(g.protocol) {
		// It answered initialize this time (the SDK falls back to it
		// when server/discover fails): no protocol matter after all.
		return sess, nil
	}
	if err2 != nil {
		s.cfg.Logger.Debug(fmt.Sprintf("the server refused the classic initialize handshake (%s) and the %s probe of protocol %s too",
			ClassicProtocolVersion, transport.MethodDiscover, DefaultProtocolVersion),
			"server", s.cfg.Name, "generation", g.id, "err", redact.Error(err2))
		return nil, err
	}
	s.modern.Store(true)
	s.cfg.Logger.Warn(fmt.Sprintf("server refused the classic initialize handshake (%s) but answered the %s probe of protocol %s: using it from now on",
		ClassicProtocolVersion, transport.MethodDiscover, g.protocol),
		"server", s.cfg.Name, "generation", g.id, "err", redact.Error(err))
	return sess, nil
}

// reopen waits, within ctx, for the process of t (if it has one) to be
// gone, then opens the generation's next transport: an attempt that
// learns a protocol never has two processes of the server alive. waiting
// says what a wait that ctx ended was for.
func (g *generation) reopen(ctx context.Context, t mcp.Transport, waiting string) (mcp.Transport, error) {
	if term, ok := t.(Terminator); ok {
		select {
		case <-term.Terminate():
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", waiting, causeOf(ctx, ctx.Err()))
		}
	}
	return g.open(ctx)
}

// open opens a fresh transport and makes it the generation's, unless
// shutdown started (then its process, if any, is terminated).
func (g *generation) open(ctx context.Context) (mcp.Transport, error) {
	t, err := g.sup.cfg.Transport.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("open transport: %w", err)
	}
	if r, ok := t.(transport.Owned); ok {
		r.ReportTo(g) // before it is connected: it reports from the start
	}
	if !g.attach(func() {
		g.transport = t
		if term, ok := t.(Terminator); ok {
			g.sup.procs.add(term)
		}
	}) {
		if term, ok := t.(Terminator); ok {
			<-term.Terminate()
		}
		return nil, ErrClosed
	}
	return t, nil
}

// connectWire connects a fresh client over t, wired (transport.Wired), and records
// the negotiated protocol version.
func (g *generation) connectWire(ctx context.Context, t mcp.Transport, version string) (*mcp.ClientSession, error) {
	ack := transport.NewListenAck()
	// A transport that reports its own end (a stdio process) needs no
	// report from the wire.
	var ended func(*transport.Wire)
	if _, ok := t.(transport.Owned); !ok {
		ended = func(w *transport.Wire) { g.SessionEnded(w, false) }
	}
	// A tool list change is signalled by the wire, in the order it was
	// read: before an answer read after it (the attempt's or a re-sync's
	// last page) reaches its caller.
	wt, w := transport.Wired(t, g.listenBroken, ended, g.signalChanged, ack)
	g.mu.Lock()
	g.wire = w
	g.mu.Unlock()
	sess, err := g.newClient().Connect(ctx, wt, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	if res := sess.InitializeResult(); res != nil {
		g.protocol = res.ProtocolVersion
	}
	if err := g.awaitListenAck(ctx, ack); err != nil {
		_ = sess.Close()
		return nil, err
	}
	return sess, nil
}

// listenAckWait bounds the wait for a server's acknowledgement of
// subscriptions/listen (within ConnectTimeout).
const listenAckWait = 5 * time.Second

// connectByKey is the context key of an attempt's end, by ConnectTimeout
// (generation.connect), as a time.Time on the supervisor's clock.
type connectByKey struct{}

// awaitListenAck waits, when the session sent subscriptions/listen
// (protocol 2026-07-28), until the server acknowledges it: only then are
// its subscriptions in place, and a change made between them and the
// attempt's listing would otherwise be missed silently. A server that
// never acknowledges is used all the same after listenAckWait, with a
// warning.
func (g *generation) awaitListenAck(ctx context.Context, ack *transport.ListenAck) error {
	if !ack.Sent() {
		return nil
	}
	s := g.sup
	// A wait that would end at ConnectTimeout's instant or later is left
	// to ConnectTimeout alone: two timers of one instant fire in either
	// order, and the attempt would fail or go on by chance.
	wctx, cancel := context.WithCancel(ctx)
	if by, ok := ctx.Value(connectByKey{}).(time.Time); !ok || s.clk.Now().Add(listenAckWait).Before(by) {
		cancel()
		wctx, cancel = withTimeout(ctx, s.clk, listenAckWait)
	}
	defer cancel()
	select {
	case <-ack.Acked():
		return nil
	case <-wctx.Done():
	}
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for the server to acknowledge %s: %w", transport.MethodSubscriptionsListen, causeOf(ctx, ctx.Err()))
	}
	s.cfg.Logger.Warn(fmt.Sprintf("the server did not acknowledge %s within %v; list changes made before it does may be missed", transport.MethodSubscriptionsListen, listenAckWait),
		"server", s.cfg.Name, "generation", g.id)
	return nil
}

// listenBroken ends the generation whose subscriptions/listen stream ended
// (Streamable HTTP on protocol 2026-07-28): nothing else would tell the
// supervisor that list changes and resource updates no longer arrive, so
// it is a lost connection, and the next generation re-subscribes and lists
// everything again, so that no change is missed silently.
//
// During the attempt, the attempt fails instead: its context ends.
func (g *generation) listenBroken(err error) {
	if g.lifeState() == genConnecting {
		g.cancel()
		return
	}
	g.markBad(g.sup.clk.Now(), err)
}
