package front

import (
	"context"
	"errors"

	"github.com/mcpfsm/mcpfsm/conn"
)

// backend is where a request of a client to a server goes: the server's
// shared instance, or the client's own instance of it.
type backend struct {
	server  string
	subject string             // the caller's, for the sign-in hint
	sup     *conn.Supervisor   // nil when the front knows no supervisor of the server
	tools   *conn.ToolRegistry // where the instance publishes its tools
	cat     *conn.Catalog      // and its catalog
	own     bool               // the client's own instance
	done    func()             // ends the request's use of the instance
	f       *Front
}

// status is the status of the instance, if the front knows it.
func (b backend) status() (conn.Status, bool) {
	if b.sup != nil {
		return b.sup.Status(), true
	}
	return b.f.status(b.server)
}

// sharedIsModern reports whether server's shared instance speaks the
// stateless protocol (its configuration pins it, or the server refused
// the classic handshake): it then serves the 2026-07-28 clients too,
// and no instance of their era is started.
func (f *Front) sharedIsModern(server string) bool {
	st, ok := f.status(server)
	return ok && st.Protocol >= conn.StatelessProtocolVersion
}

// errServerDown: a request would start an instance of a server whose
// shared instance is not established.
var errServerDown = errors.New("the server is down")

// backend returns where c's request to server goes: its own instance
// of it, started and waited for (by ctx) on first use, when the server
// is isolated per client; for a 2026-07-28 client of a shared server,
// that server's shared instance of its era (erainstance.go); the shared
// instance otherwise. The caller
// calls done once the request ends.
func (c *client) backend(ctx context.Context, server string) (backend, error) {
	f := c.f
	if !c.isolated(server) {
		if c.kind == subjectClient && !f.sharedIsModern(server) {
			if ei := f.eraInstance(server); ei != nil {
				return c.eraBackend(ctx, server, ei)
			}
		}
		return c.sharedBackend(server), nil
	}
	in, err := c.instanceOf(server)
	if err != nil {
		return backend{}, err
	}
	if in.Running() == nil && c.callerSignIn(server) == nil {
		// A first use (or one after an idle close) during an outage of
		// the server is answered at once, as any call during an outage,
		// from the shared instance's state: an instance started now would
		// only wait for the same server. An instance that signs in with
		// the caller's own credential is not the shared one's outage: it
		// starts (and asks its caller to sign in when it must).
		shared := backend{server: server, subject: c.subject, tools: f.opts.Registry, cat: f.opts.Catalog, done: func() {}, f: f}
		// A server still on its first attempt (connecting: an npx
		// server takes seconds to start) is no outage: the instance
		// starts and the request waits for it below.
		if st, ok := shared.status(); ok && st.State != conn.Established && st.State != conn.Connecting {
			return shared, errServerDown
		}
	}
	sup, started, done, err := in.Use(ctx)
	if err != nil {
		return backend{}, err
	}
	// The first attempt's outcome, or the request's deadline: a request
	// made while the instance starts waits for it, and one it failed for
	// is told how the instance is.
	_ = sup.Ready(ctx)
	if started {
		// The request that started the instance finds it as its client
		// left the shared one: its logging level set. Its roots it had
		// from its start (configure).
		if level := c.levels.get(); level != "" {
			if err := setLevel(ctx, sup, level); err != nil {
				f.opts.Logger.Debug("logging level not forwarded: "+err.Error(), "server", server, "level", level)
			}
		}
	}
	return backend{server: server, subject: c.subject, sup: sup, tools: c.reg, cat: c.cat, own: true, done: done, f: f}, nil
}

// sharedBackend is server's shared instance, as a backend.
func (c *client) sharedBackend(server string) backend {
	f := c.f
	b := backend{server: server, subject: c.subject, tools: f.opts.Registry, cat: f.opts.Catalog, done: func() {}, f: f}
	if f.opts.Backends != nil {
		b.sup, _ = f.opts.Backends.Supervisor(server)
	}
	return b
}

// isolated reports whether c has (or gets) an instance of its own of
// server: over HTTP, unless the server is shared and its credential is
// not c's own (Options.CallerSignIn).
func (c *client) isolated(server string) bool {
	return c.kind != stdioClient && c.f.opts.Backends != nil && (!c.f.isolation(server).shared || c.callerSignIn(server) != nil)
}
