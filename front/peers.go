//lint:file-ignore SA1019 roots and logging are deprecated upstream (SEP-2577) but still relayed.

package front

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peers keeps what belongs to each front client session: the calls it
// has in flight on each server, its roots and its logging level. A
// server's requests and notifications go only to the session they can
// be traced to (see [Front.route]); nothing of one session's reaches or
// changes another's.
type peers struct {
	mu sync.Mutex
	by map[*mcp.ServerSession]*peer
}

// peer is one front session's share.
type peer struct {
	calls        map[string][]*inflight // server -> requests of this session in flight there, oldest first
	roots        []*mcp.Root
	rootsKnown   bool
	rootsPending bool             // not read at initialized: read at the next request
	level        mcp.LoggingLevel // "" until the session sets one
}

// get returns ss's share, making it; the caller holds mu.
func (p *peers) get(ss *mcp.ServerSession) *peer {
	if p.by == nil {
		p.by = map[*mcp.ServerSession]*peer{}
	}
	pe := p.by[ss]
	if pe == nil {
		pe = &peer{calls: map[string][]*inflight{}}
		p.by[ss] = pe
	}
	return pe
}

// inflight is one request of a front session in flight on a server.
type inflight struct {
	// ctx is the request's context in the front server: a message sent to
	// the session under its values goes on the request's own stream.
	ctx context.Context
	// logged has a value once a log message of the server was relayed
	// during the request (see Front.settleLogs).
	logged chan struct{}
}

// begin records a request of ss in flight on server, made under ctx; the
// returned function ends it.
func (f *Front) begin(ctx context.Context, ss *mcp.ServerSession, server string) (end func()) {
	if ss == nil {
		return func() {}
	}
	in := &inflight{ctx: ctx, logged: make(chan struct{}, 1)}
	f.peers.mu.Lock()
	pe := f.peers.get(ss)
	pe.calls[server] = append(pe.calls[server], in)
	f.peers.mu.Unlock()
	return func() {
		f.peers.mu.Lock()
		defer f.peers.mu.Unlock()
		pe := f.peers.by[ss]
		if pe == nil {
			return
		}
		pe.calls[server] = slices.DeleteFunc(pe.calls[server], func(x *inflight) bool { return x == in })
		if len(pe.calls[server]) == 0 {
			delete(pe.calls, server)
		}
	}
}

// requestContext is the context of the newest request of ss in flight on
// server, or nil when it has none.
func (f *Front) requestContext(ss *mcp.ServerSession, server string) context.Context {
	if in := f.newest(ss, server); in != nil {
		return in.ctx
	}
	return nil
}

// newest is the newest request of ss in flight on server, or nil.
func (f *Front) newest(ss *mcp.ServerSession, server string) *inflight {
	f.peers.mu.Lock()
	defer f.peers.mu.Unlock()
	if pe := f.peers.by[ss]; pe != nil {
		if calls := pe.calls[server]; len(calls) > 0 {
			return calls[len(calls)-1]
		}
	}
	return nil
}

// connected returns the sessions connected (and initialized) now, and
// forgets the shares of sessions that have ended.
func (f *Front) connected() []*mcp.ServerSession {
	var live []*mcp.ServerSession
	seen := map[*mcp.ServerSession]bool{}
	for ss := range f.server.Sessions() {
		seen[ss] = true
		if ss.InitializeParams() != nil { // a probe that never initialized is nobody's
			live = append(live, ss)
		}
	}
	f.peers.mu.Lock()
	for ss := range f.peers.by {
		if !seen[ss] {
			delete(f.peers.by, ss)
		}
	}
	f.peers.mu.Unlock()
	return live
}

// route is the one front session a request or notification of server
// belongs to: the session with requests in flight on server, when
// exactly one has; with none in flight, the only session connected.
// Otherwise no session can be named, and the error says why.
func (f *Front) route(server string) (*mcp.ServerSession, error) {
	live := f.connected()
	f.peers.mu.Lock()
	var calling []*mcp.ServerSession
	for _, ss := range live {
		if pe := f.peers.by[ss]; pe != nil && len(pe.calls[server]) > 0 {
			calling = append(calling, ss)
		}
	}
	f.peers.mu.Unlock()
	switch {
	case len(calling) == 1:
		return calling[0], nil
	case len(calling) > 1:
		return nil, fmt.Errorf("%w: %d clients of mcpfsm have requests in flight on server %q, and it cannot tell which one this is for",
			ErrNoPeer, len(calling), server)
	case len(live) == 1:
		return live[0], nil
	case len(live) == 0:
		return nil, fmt.Errorf("%w: no client is connected to mcpfsm", ErrNoPeer)
	}
	return nil, fmt.Errorf("%w: %d clients are connected to mcpfsm and none has a request in flight on server %q",
		ErrNoPeer, len(live), server)
}

// setRoots records the roots of ss, and reports whether ss is the only
// session connected (whose roots the supervisors may then hold).
func (f *Front) setRoots(ss *mcp.ServerSession, roots []*mcp.Root) (only bool) {
	live := f.connected()
	f.peers.mu.Lock()
	defer f.peers.mu.Unlock()
	pe := f.peers.get(ss)
	pe.roots, pe.rootsKnown = cloneRoots(roots), true
	return len(live) == 1 && live[0] == ss
}

// setRootsPending marks whether the roots of ss are to be read at its
// next request, and reports whether they were.
func (f *Front) setRootsPending(ss *mcp.ServerSession, pending bool) (was bool) {
	f.peers.mu.Lock()
	defer f.peers.mu.Unlock()
	if !pending {
		if pe := f.peers.by[ss]; pe != nil {
			was, pe.rootsPending = pe.rootsPending, false
		}
		return was
	}
	pe := f.peers.get(ss)
	was, pe.rootsPending = pe.rootsPending, true
	return was
}

// rootsOf returns the roots of ss as last read, and whether any were.
func (f *Front) rootsOf(ss *mcp.ServerSession) ([]*mcp.Root, bool) {
	f.peers.mu.Lock()
	defer f.peers.mu.Unlock()
	pe := f.peers.by[ss]
	if pe == nil || !pe.rootsKnown {
		return nil, false
	}
	return cloneRoots(pe.roots), true
}

// setLevel records the logging level of ss, and returns the most verbose
// level any connected session asked for: the level the servers are sent.
// Each session still receives only what its own level admits.
func (f *Front) setLevel(ss *mcp.ServerSession, level mcp.LoggingLevel) mcp.LoggingLevel {
	live := f.connected()
	f.peers.mu.Lock()
	defer f.peers.mu.Unlock()
	f.peers.get(ss).level = level
	var most mcp.LoggingLevel
	for _, s := range live {
		if pe := f.peers.by[s]; pe != nil && pe.level != "" && (most == "" || severity(pe.level) < severity(most)) {
			most = pe.level
		}
	}
	return most
}

// levelOf is the logging level ss set, "" if none.
func (f *Front) levelOf(ss *mcp.ServerSession) mcp.LoggingLevel {
	f.peers.mu.Lock()
	defer f.peers.mu.Unlock()
	if pe := f.peers.by[ss]; pe != nil {
		return pe.level
	}
	return ""
}

// severity orders the logging levels, debug (0) to emergency (7).
func severity(l mcp.LoggingLevel) int {
	for i, name := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if l == name {
			return i
		}
	}
	return 0
}
