//lint:file-ignore SA1019 logging is deprecated upstream (SEP-2577) but still relayed.

package front

import (
	"context"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logRelay carries the front sessions' logging level to the servers, and
// their log messages back.
type logRelay struct {
	wg sync.WaitGroup // level sends in flight

	mu    sync.Mutex
	level mcp.LoggingLevel // the servers' level: the most verbose any session asked for
}

// levelMiddleware records a logging/setLevel that the front accepted as
// the session's own, and sends every supervised server the most verbose
// level any session asked for: each session still receives only what its
// own level admits (the SDK filters per session), so no client changes
// what another sees.
func (f *Front) levelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !ok || p == nil || ss == nil {
			return res, err
		}
		level := f.setLevel(ss, p.Level)
		f.logs.mu.Lock()
		changed := f.logs.level != level
		f.logs.level = level
		f.logs.mu.Unlock()
		if changed && f.opts.Supervisors != nil {
			for _, sup := range f.opts.Supervisors() {
				f.sendLevel(sup)
			}
		}
		return res, err
	}
}

// levelAfter re-sends the level to a server that has just connected: a
// new session starts without one.
func (f *Front) levelAfter(t conn.Transition) {
	if t.To != conn.Established || f.opts.Supervisor == nil {
		return
	}
	f.logs.mu.Lock()
	level := f.logs.level
	f.logs.mu.Unlock()
	if level == "" {
		return // nothing to re-send
	}
	if sup, ok := f.opts.Supervisor(t.Server); ok {
		f.sendLevel(sup)
	}
}

// sendLevel sends the current level to sup's server, off the caller's
// goroutine. A server without logging refuses it; that is logged at debug.
func (f *Front) sendLevel(sup *conn.Supervisor) {
	f.logs.mu.Lock()
	level := f.logs.level
	f.logs.mu.Unlock()
	if level == "" {
		return
	}
	f.logs.wg.Add(1)
	go func() {
		defer f.logs.wg.Done()
		err := sup.WithSession(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
			if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Logging == nil {
				return nil
			}
			return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
		})
		if err != nil {
			f.opts.Logger.Debug("logging level not forwarded: "+err.Error(), "server", sup.Status().Server, "level", level)
		}
	}()
}

// relayLog sends a server's log message, with the server's name in front
// of its logger name, to the front session it belongs to ([Front.route]):
// the one with requests in flight on the server, or the only one
// connected. A message no session can be named for is dropped, not sent
// to every session. The SDK drops it for a session that set no level or
// a higher one.
func (f *Front) relayLog(ctx context.Context, server string, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	ss, err := f.route(server)
	if err != nil {
		f.opts.Logger.Debug("log message not relayed: "+err.Error(), "server", server)
		return
	}
	m := *p
	m.Meta = nil
	if m.Logger == "" {
		m.Logger = server
	} else {
		m.Logger = server + "/" + m.Logger
	}
	// On the stream of the call it is about, if any; the session's other
	// stream if that call has ended meanwhile.
	sctx, cancel := f.onStream(ctx, ss, server)
	err = ss.Log(sctx, &m)
	cancel()
	if err != nil {
		err = ss.Log(ctx, &m)
	}
	if err != nil {
		f.opts.Logger.Debug("log message not relayed: "+err.Error(), "server", server)
		return
	}
	if in := f.newest(ss, server); in != nil {
		select {
		case in.logged <- struct{}{}: // the call waits for its messages (settleLogs)
		default:
		}
	}
}
