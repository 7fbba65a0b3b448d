package console

import (
	"context"
	"errors"

	"github.com/mcpfsm/mcpfsm/conn"
)

// Server is one supervised server as the console sees it. A
// [*conn.Supervisor] provides Status; Reconnect starts an attempt at once
// and returns its outcome (nil when the connection is established, an
// error matching [conn.ErrClosed] after Close).
type Server interface {
	Status() conn.Status
	Reconnect(ctx context.Context) error
}

// Host is the process the console shows: it runs the supervisors.
//
// Servers returns the servers running now; the console calls it for every
// request, so a reload that adds or removes servers shows at once. Reload
// re-reads the host's configuration and applies it; a host that cannot
// reload returns an error matching [ErrReloadUnsupported].
type Host interface {
	Servers() []Server
	Reload(ctx context.Context) error
}

// ErrReloadUnsupported is returned by a [Host] that cannot reload its
// configuration; POST /api/reload then answers 501 Not Implemented.
var ErrReloadUnsupported = errors.New("this host cannot reload its configuration")

// ErrUnknownServer is returned by [Client] calls naming a server the host
// does not run (the API answers 404).
var ErrUnknownServer = errors.New("unknown server")
