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

// levels is one client's logging level, as its last accepted
// logging/setLevel set it, and sends a new one on. A levels has a lock of
// its own, taken alone: no other lock is taken under it. The client makes
// one at its start and adds its middleware to the client's server; its
// backends read the level (get) when an instance of the client's starts
// and when a call waits for its log messages.
type levels struct {
	// apply sends a new level on, with no lock of the levels held: to the
	// client's own instances and the shared ones (client.applyLevel).
	apply func(mcp.LoggingLevel)

	mu    sync.Mutex
	level mcp.LoggingLevel
}

// middleware records a logging/setLevel that the client's server
// accepted, and sends it on.
func (l *levels) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
		if !ok || p == nil {
			return res, err
		}
		l.mu.Lock()
		l.level = p.Level
		l.mu.Unlock()
		l.apply(p.Level)
		return res, err
	}
}

// get is the level the client set, "" if none.
func (l *levels) get() mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level
}

// logRelay carries the clients' logging level to the shared instances.
type logRelay struct {
	mu    sync.Mutex
	level mcp.LoggingLevel // the shared instances' level
}

// sharedLevel sends the shared instances the most verbose level any
// client asked for, when it changed.
func (f *Front) sharedLevel() {
	var most mcp.LoggingLevel
	for _, c := range f.all() {
		if l := c.levels.get(); l != "" && (most == "" || severity(l) < severity(most)) {
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

// severity orders the logging levels, debug (0) to emergency (7).
func severity(l mcp.LoggingLevel) int {
	for i, name := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if l == name {
			return i
		}
	}
	return 0
}
