package host

import (
	"context"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/console"
)

// Servers implements console.Host: every server with a supervisor.
func (h *Host) Servers() []console.Server {
	var out []console.Server
	for _, st := range h.running() {
		if st.sup != nil {
			out = append(out, consoleServer{h: h, st: st})
		}
	}
	return out
}

// consoleServer is one running server as the console sees it, by name:
// a reload that replaces its supervisor shows at once.
type consoleServer struct {
	h  *Host
	st *server // when the console asked
}

func (s consoleServer) current() *server {
	if cur, ok := s.h.lookup(s.st.cfg.Name); ok && cur.sup != nil {
		return cur
	}
	return s.st
}

func (s consoleServer) Status() conn.Status { return s.current().sup.Status() }

// Instances implements console.Instanced: the server's per-client
// instances by state.
func (s consoleServer) Instances() map[conn.State]int {
	live := s.current().live()
	if len(live) == 0 {
		return nil
	}
	out := map[conn.State]int{}
	for _, sup := range live {
		out[sup.State()]++
	}
	return out
}

func (s consoleServer) Reconnect(ctx context.Context) error { return s.current().sup.Reconnect(ctx) }

// Sandbox implements console.Sandboxed: what the server's sandbox allows.
func (s consoleServer) Sandbox() []string {
	if sb := s.current().cfg.Sandbox; sb != nil {
		return sb.Describe()
	}
	return nil
}
