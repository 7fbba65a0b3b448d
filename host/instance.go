package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
)

// Isolation says how the clients of a front's HTTP handler share server
// (package front's Backends): shared with "isolation": "shared" in its
// config, per-client otherwise, with its "maxInstances".
func (h *Host) Isolation(server string) (shared bool, maxInstances int) {
	st, ok := h.lookup(server)
	if !ok {
		return true, 0
	}
	return st.cfg.Isolation == config.IsolationShared, st.cfg.MaxInstances
}

// StartInstance starts an instance of server beside its shared one (a
// client's own instance, or a shared server's instance for the clients
// of another protocol era; package front decides): a supervisor of
// its own, with the server's configuration as the shared instance has
// it, changed by configure, which sets what is the client's (its
// registry, catalog, client options and roots), and started by
// Options.StartInstance. Its transitions are logged but not reported to
// Options.OnTransition, which follows the shared instance. It is closed by its owner, and by the host when the
// server is restarted or removed by a reload, and by Close: no instance
// outlives the host. [Host.Status] counts the instances running.
func (h *Host) StartInstance(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error) {
	st, ok := h.lookup(server)
	if !ok {
		return nil, fmt.Errorf("host: unknown server %q", server)
	}
	c := ConnConfig(st.cfg, st.stderr)
	h.opts.signIn(st.cfg, &c)
	c.Logger = h.log.With("instance", "per-client")
	configure(&c)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.retired {
		return nil, fmt.Errorf("mcp server %q: %w: it was stopped", server, conn.ErrClosed)
	}
	sup, err := h.opts.StartInstance(ctx, c)
	if err != nil {
		return nil, err
	}
	st.instances = append(slices.DeleteFunc(st.instances, disposed), sup)
	return sup, nil
}

// live returns the per-client instances of st that have not ended.
func (st *server) live() []*conn.Supervisor {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.instances = slices.DeleteFunc(st.instances, disposed)
	return slices.Clone(st.instances)
}

// retire stops st from starting instances and returns those it has.
func (st *server) retire() []*conn.Supervisor {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.retired = true
	out := st.instances
	st.instances = nil
	return out
}

func disposed(sup *conn.Supervisor) bool { return sup.State() == conn.Disposed }
