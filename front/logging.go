//lint:file-ignore SA1019 logging is deprecated upstream (SEP-2577) but still relayed.

package front

import (
	"context"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client's logging level goes to the instances that serve it as its
// own; the shared instances get the most verbose level any client asked
// for. Each client still receives only what its own level admits (its
// server filters per session), so no client changes what another sees.

// logRelay carries the clients' logging level to the shared instances.
type logRelay struct {
	mu    sync.Mutex
	level mcp.LoggingLevel // the shared instances' level
}

// levelMiddleware records a logging/setLevel that c's server accepted,
// and sends it on.
func (c *client) levelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
		if !ok || p == nil {
			return res, err
		}
		c.mu.Lock()
		c.level = p.Level
		servers := make([]string, 0, len(c.instances))
		for name := range c.instances {
			servers = append(servers, name)
		}
		c.mu.Unlock()
		for _, name := range servers {
			c.sendLevel(name)
		}
		c.f.sharedLevel()
		return res, err
	}
}

// levelOf is the logging level c set, "" if none.
func (c *client) levelOf() mcp.LoggingLevel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.level
}

// sendLevel sends c's level to its instance of server, if it runs.
func (c *client) sendLevel(server string) {
	level := c.levelOf()
	if level == "" {
		return
	}
	c.mu.Lock()
	in := c.instances[server]
	c.mu.Unlock()
	if in == nil {
		return
	}
	if sup := in.running(); sup != nil {
		c.f.setLevel(sup, level)
	}
}

// sharedLevel sends the shared instances the most verbose level any
// client asked for, when it changed.
func (f *Front) sharedLevel() {
	var most mcp.LoggingLevel
	for _, c := range f.all() {
		if l := c.levelOf(); l != "" && (most == "" || severity(l) < severity(most)) {
			most = l
		}
	}
	f.logs.mu.Lock()
	changed := f.logs.level != most
	f.logs.level = most
	f.logs.mu.Unlock()
	if changed && most != "" {
		for _, sup := range f.supervisors() {
			f.setLevel(sup, most)
		}
	}
}

// levelAfter re-sends the level to a shared instance that has just
// connected: a new session starts without one.
func (f *Front) levelAfter(t conn.Transition) {
	if t.To != conn.Established || f.opts.Backends == nil {
		return
	}
	f.logs.mu.Lock()
	level := f.logs.level
	f.logs.mu.Unlock()
	if level == "" {
		return // nothing to re-send
	}
	if sup, ok := f.opts.Backends.Supervisor(t.Server); ok {
		f.setLevel(sup, level)
	}
}

// setLevel sends level to sup's server, off the caller's goroutine. A
// server without logging refuses it; that is logged at debug.
func (f *Front) setLevel(sup *conn.Supervisor, level mcp.LoggingLevel) {
	f.wg.Go(func() {
		if err := setLevel(context.Background(), sup, level); err != nil {
			f.opts.Logger.Debug("logging level not forwarded: "+err.Error(), "server", sup.Status().Server, "level", level)
		}
	})
}

// setLevel sends level to sup's server, if it has logging.
func setLevel(ctx context.Context, sup *conn.Supervisor, level mcp.LoggingLevel) error {
	return sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Logging == nil {
			return nil
		}
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
	})
}

// relayLog sends a server's log message, with the server's name in front
// of its logger name, to the client it belongs to (see [ErrNoPeer]). A
// message no client can be named for is dropped, not sent to every
// client. The SDK drops it for a session that set no level or a higher
// one.
func (f *Front) relayLog(ctx context.Context, server string, only *client, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	c, in, err := f.peer(ctx, server, only)
	if err != nil {
		f.opts.Logger.Debug("log message not relayed: "+err.Error(), "server", server)
		return
	}
	ss := c.sessionFor(in)
	if ss == nil {
		return // a modern client with no call in flight: nothing carries it
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
	sctx, cancel := onStream(ctx, in)
	err = ss.Log(sctx, &m)
	cancel()
	if err != nil {
		err = ss.Log(ctx, &m)
	}
	if err != nil {
		f.opts.Logger.Debug("log message not relayed: "+err.Error(), "server", server)
		return
	}
	if in != nil {
		select {
		case in.logged <- struct{}{}: // the call waits for its messages (settleLogs)
		default:
		}
	}
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
