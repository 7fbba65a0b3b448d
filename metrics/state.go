package metrics

import (
	"context"

	"github.com/mcpfsm/mcpfsm/conn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// tracked is a supervisor reported by the observable instruments, with
// its attribute sets built once.
type tracked struct {
	server metric.MeasurementOption
	states []stateSet // one per state of conn.Table(), in table order
}

type stateSet struct {
	state conn.State
	opt   metric.MeasurementOption
}

// Track reports sup's state (mcpfsm.connection.state) and its registered
// tools (mcpfsm.connection.tools) at every collection until sup is
// disposed, or until the returned function is called. Tracking a
// supervisor twice reports it once, and either function stops it.
func (m *Metrics) Track(sup *conn.Supervisor) (untrack func()) {
	server := sup.Status().Server
	tr := &tracked{server: metric.WithAttributeSet(attribute.NewSet(serverAttr(server)))}
	spec := conn.Table()
	for _, st := range spec.States {
		if spec.Superstate(st.Name) {
			continue // a group of states, never the current one
		}
		tr.states = append(tr.states, stateSet{st.Name, metric.WithAttributeSet(attribute.NewSet(
			serverAttr(server), attribute.String(KeyState, string(st.Name))))})
	}
	m.mu.Lock()
	if _, ok := m.tracked[sup]; !ok {
		m.tracked[sup] = tr
	}
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.tracked, sup)
	}
}

// observe is the callback of the observable instruments. It first records
// the tool calls queued since the last collection: the SDK runs callbacks
// before it reads the synchronous instruments, so a collection sees every
// call that ended before it began. A disposed supervisor is reported no
// more and forgotten.
func (m *Metrics) observe(_ context.Context, o metric.Observer) error {
	m.pending.flush(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	for sup, tr := range m.tracked {
		st := sup.Status()
		if st.State == conn.Disposed {
			delete(m.tracked, sup)
			continue
		}
		for _, s := range tr.states {
			v := int64(0)
			if s.state == st.State {
				v = 1
			}
			o.ObserveInt64(m.state, v, s.opt)
		}
		o.ObserveInt64(m.tools, int64(len(st.Tools)), tr.server)
	}
	if count := m.countInst.Load(); count != nil {
		for server, n := range (*count)() {
			o.ObserveInt64(m.instances, int64(n), metric.WithAttributes(attribute.String(KeyServer, server)))
		}
	}
	return nil
}

// CountInstances makes count the source of mcpfsm.server.instances: the
// instances each server runs beside its shared one (a host's Status:
// per-client instances, or a shared server's instance for 2026-07-28
// clients). Nil stops
// reporting them.
func (m *Metrics) CountInstances(count func() map[string]int) {
	if m == nil {
		return
	}
	if count == nil {
		m.countInst.Store(nil)
		return
	}
	m.countInst.Store(&count)
}
