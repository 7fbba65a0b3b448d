package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/health"
)

// fleet is the running set of servers of run and serve: what the console
// shows, and what a reload (SIGHUP or POST /api/reload) changes. A reload
// diffs the servers by name: new ones start, removed ones close, changed
// ones restart, and unchanged ones keep their supervisor, their process and
// their tools.
type fleet struct {
	path string // the config file
	reg  conn.Registry
	opts startOptions // set before the first start

	change sync.Mutex // serialises reloads, restarts and the final close
	closed bool       // under change: closeEvery ran; nothing starts any more

	mu  sync.Mutex
	all []*started // sorted by name
}

// set replaces the running set.
func (f *fleet) set(all []*started) {
	all = slices.Clone(all)
	slices.SortFunc(all, func(a, b *started) int { return cmp.Compare(a.srv.Name, b.srv.Name) })
	f.mu.Lock()
	f.all = all
	f.mu.Unlock()
}

// running returns the running set.
func (f *fleet) running() []*started {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.all)
}

// status returns the status of the supervisor of server.
func (f *fleet) status(server string) (conn.Status, bool) {
	for _, st := range f.running() {
		if st.srv.Name == server && st.sup != nil {
			return st.sup.Status(), true
		}
	}
	return conn.Status{}, false
}

// health returns every configured server for the probes of package
// health.
func (f *fleet) health() []health.Status {
	var out []health.Status
	for _, st := range f.running() {
		hs := health.Status{Name: st.srv.Name, Err: st.err}
		if st.sup != nil {
			hs.Status, hs.Err = st.sup.Status(), nil
		}
		out = append(out, hs)
	}
	return out
}

// supervisor returns the supervisor of server.
func (f *fleet) supervisor(server string) (*conn.Supervisor, bool) {
	st, ok := f.lookup(server)
	if !ok || st.sup == nil {
		return nil, false
	}
	return st.sup, true
}

// supervisors returns every running supervisor.
func (f *fleet) supervisors() []*conn.Supervisor {
	var out []*conn.Supervisor
	for _, st := range f.running() {
		if st.sup != nil {
			out = append(out, st.sup)
		}
	}
	return out
}

// Servers implements console.Host.
func (f *fleet) Servers() []console.Server {
	var out []console.Server
	for _, st := range f.running() {
		if st.sup != nil {
			out = append(out, fleetServer{f: f, st: st})
		}
	}
	return out
}

// fleetServer is one running server as the console sees it, by name: a
// restart or reload that replaces its supervisor shows at once.
type fleetServer struct {
	f  *fleet
	st *started // when the console asked
}

func (s fleetServer) current() *started {
	if cur, ok := s.f.lookup(s.st.srv.Name); ok && cur.sup != nil {
		return cur
	}
	return s.st
}

func (s fleetServer) Status() conn.Status { return s.current().sup.Status() }

func (s fleetServer) Reconnect(ctx context.Context) error { return s.f.reconnect(ctx, s.current()) }

// reconnect starts an attempt of st's server now and returns its outcome:
// conn.Supervisor.Reconnect, which cuts a backoff short, starts again
// from a state where reconnecting stopped, joins an attempt in flight and
// changes nothing when the server is connected.
func (f *fleet) reconnect(ctx context.Context, st *started) error { return st.sup.Reconnect(ctx) }

func (f *fleet) lookup(name string) (*started, bool) {
	for _, st := range f.running() {
		if st.srv.Name == name {
			return st, true
		}
	}
	return nil, false
}

// replace puts the started servers in place of those of the same name,
// adds the others, and drops the servers named in removed.
func (f *fleet) replace(next map[string]*started, removed []string) {
	var all []*started
	for _, st := range f.running() {
		if _, ok := next[st.srv.Name]; !ok && !slices.Contains(removed, st.srv.Name) {
			all = append(all, st)
		}
	}
	for _, st := range next {
		all = append(all, st)
	}
	f.set(all)
}

// Reload re-reads the config file and applies it. A file that does not
// load changes nothing. Servers whose Start fails are reported; the rest
// of the new set runs.
func (f *fleet) Reload(ctx context.Context) error {
	f.change.Lock()
	defer f.change.Unlock()
	if f.closed {
		return fmt.Errorf("reload: %w: mcpfsm is shutting down", conn.ErrClosed)
	}
	logger := f.opts.logger
	cfg, err := config.Load(f.path, nil)
	if err != nil {
		logger.Error("reload failed; the running servers are unchanged", "config", f.path, "err", err)
		return fmt.Errorf("%s: %w; the running servers are unchanged", f.path, err)
	}
	for _, w := range cfg.Warnings {
		logger.Warn("reload: "+w, "config", f.path)
	}
	old := map[string]*started{}
	for _, st := range f.running() {
		old[st.srv.Name] = st
	}
	var stop []*started
	var start []config.Server
	var added, changed, removed, kept []string
	for _, srv := range cfg.Servers {
		st, ok := old[srv.Name]
		switch {
		case !ok:
			added = append(added, srv.Name)
			start = append(start, srv)
		case st.sup == nil || !reflect.DeepEqual(st.srv, srv):
			changed = append(changed, srv.Name)
			stop = append(stop, st)
			start = append(start, srv)
		default:
			kept = append(kept, srv.Name)
		}
		delete(old, srv.Name)
	}
	for name, st := range old {
		removed = append(removed, name)
		stop = append(stop, st)
	}
	slices.Sort(removed)
	// Close before starting: a changed server must not run twice, and its
	// name must be free in the registry for its successor.
	closeErr := closeAll(context.Background(), stop)
	next := map[string]*started{}
	var errs []error
	for _, st := range startAll(ctx, start, f.reg, f.opts) {
		next[st.srv.Name] = st
		if st.err != nil {
			errs = append(errs, fmt.Errorf("server %s did not start: %w", st.srv.Name, st.err))
		}
	}
	f.replace(next, removed)
	logger.Info("reloaded the config", "config", f.path,
		"added", names(added), "restarted", names(changed), "removed", names(removed), "unchanged", names(kept))
	if err := errors.Join(append([]error{closeErr}, errs...)...); err != nil {
		return fmt.Errorf("%s: applied, but: %w", f.path, err)
	}
	return nil
}

// names lists names for a log attribute.
func names(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// closeEvery closes the running set (at exit).
func (f *fleet) closeEvery(ctx context.Context) error {
	f.change.Lock()
	defer f.change.Unlock()
	f.closed = true
	return closeAll(ctx, f.running())
}
