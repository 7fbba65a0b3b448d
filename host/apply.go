package host

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
)

// ErrNoPath is returned by [Host.Reload] when Options.Path is empty: the
// host has no file to re-read.
var ErrNoPath = errors.New("cannot reload: no config file (Options.Path is empty)")

// Changes is what [Host.Apply] did, by server name.
type Changes struct {
	Added, Restarted, Removed, Unchanged []string
	// Rules are the servers whose per-caller rules alone changed: they
	// keep running, with the new rules.
	Rules []string
}

// Apply makes the running set cfg's: servers of new names start, those
// no longer named stop, those whose configuration changed restart (the
// old process has stopped before the new one starts: one server never
// runs twice), and unchanged ones keep their supervisor, process and
// tools. Servers that fail to start are reported in the error; the rest
// of the new set runs. New servers' first attempts are not waited for.
func (h *Host) Apply(ctx context.Context, cfg *config.Config) (Changes, error) {
	h.change.Lock()
	defer h.change.Unlock()
	var ch Changes
	if h.closed {
		return ch, fmt.Errorf("host: apply: %w: the host is closed", conn.ErrClosed)
	}
	old := map[string]*server{}
	for _, st := range h.running() {
		old[st.cfg.Name] = st
	}
	var stop []*server
	var start []config.Server
	reguarded := map[string]*server{}
	for _, srv := range cfg.Servers {
		st, ok := old[srv.Name]
		switch {
		case !ok:
			ch.Added = append(ch.Added, srv.Name)
			start = append(start, srv)
		case st.sup != nil && !reflect.DeepEqual(st.cfg, srv) && reflect.DeepEqual(withoutRules(st.cfg), withoutRules(srv)):
			ch.Rules = append(ch.Rules, srv.Name)
			reguarded[srv.Name] = st.withGuard(srv, h.guardOf(srv, st.guard))
		case st.sup == nil || !reflect.DeepEqual(st.cfg, srv):
			ch.Restarted = append(ch.Restarted, srv.Name)
			stop = append(stop, st)
			start = append(start, srv)
		default:
			ch.Unchanged = append(ch.Unchanged, srv.Name)
		}
		delete(old, srv.Name)
	}
	for name, st := range old {
		ch.Removed = append(ch.Removed, name)
		stop = append(stop, st)
	}
	slices.Sort(ch.Removed)
	// Close before starting: a changed server must not run twice, and its
	// name must be free in the registry for its successor.
	closeErr := closeAll(context.WithoutCancel(ctx), stop)
	next := map[string]*server{}
	var errs []error
	for _, st := range h.startAll(ctx, start, false) {
		next[st.cfg.Name] = st
		if st.err != nil {
			errs = append(errs, fmt.Errorf("server %s did not start: %w", st.cfg.Name, st.err))
		}
	}
	var all []*server
	for _, st := range h.running() {
		if n, ok := reguarded[st.cfg.Name]; ok {
			st = n
		}
		if _, ok := next[st.cfg.Name]; !ok && !slices.Contains(ch.Removed, st.cfg.Name) {
			all = append(all, st)
		}
	}
	for _, st := range next {
		all = append(all, st)
	}
	h.set(all)
	h.log.Info("applied the config", "config", h.opts.Path,
		"added", names(ch.Added), "restarted", names(ch.Restarted), "removed", names(ch.Removed), "unchanged", names(ch.Unchanged),
		"rules", names(ch.Rules))
	if h.opts.OnApply != nil {
		h.opts.OnApply(ch)
	}
	return ch, errors.Join(append([]error{closeErr}, errs...)...)
}

// Reload re-reads Options.Path and applies it. A file that does not load
// changes nothing.
func (h *Host) Reload(ctx context.Context) error {
	if h.opts.Path == "" {
		return ErrNoPath
	}
	h.change.Lock()
	closed := h.closed
	h.change.Unlock()
	if closed {
		return fmt.Errorf("host: reload: %w: the host is closed", conn.ErrClosed)
	}
	cfg, err := config.Load(h.opts.Path, h.opts.Load)
	if err != nil {
		h.log.Error("reload failed; the running servers are unchanged", "config", h.opts.Path, "err", err)
		return fmt.Errorf("%s: %w; the running servers are unchanged", h.opts.Path, err)
	}
	for _, w := range cfg.Warnings {
		h.log.Warn("reload: "+w, "config", h.opts.Path)
	}
	if errs := cfg.CheckNotServing(h.opts.Path); len(errs) > 0 {
		err := errors.Join(errs...)
		h.log.Error("reload refused; the running servers are unchanged", "config", h.opts.Path, "err", err)
		return fmt.Errorf("%s: %w; the running servers are unchanged", h.opts.Path, err)
	}
	if _, err := h.Apply(ctx, cfg); err != nil {
		return fmt.Errorf("%s: applied, but: %w", h.opts.Path, err)
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

// Close stops every server, concurrently, and returns their errors
// (naming the server). Each close is bounded by its server's close
// barrier (plus a margin) or by ctx, whichever ends first; either way
// every server process is killed. Nothing starts after Close.
func (h *Host) Close(ctx context.Context) error {
	h.change.Lock()
	defer h.change.Unlock()
	h.closed = true
	return closeAll(ctx, h.running())
}

// closeBound is how long closing servers may take: the longest close
// barrier plus a margin for the sessions to wind down.
func closeBound(all []*server) time.Duration {
	longest := conn.DefaultCloseTimeout
	for _, st := range all {
		longest = max(longest, st.cfg.CloseTimeout)
	}
	return longest + 5*time.Second
}

// closeAll closes every supervisor of all concurrently, their per-client
// instances with them, bounded by closeBound or ctx.
func closeAll(ctx context.Context, all []*server) error {
	ctx, cancel := context.WithTimeout(ctx, closeBound(all))
	defer cancel()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, st := range all {
		for _, sup := range st.retire() {
			wg.Go(func() { _ = sup.Close(ctx) }) // its owner hears of it by its state
		}
		if st.sup == nil {
			continue
		}
		wg.Go(func() {
			if err := st.sup.Close(ctx); err != nil {
				errs[i] = fmt.Errorf("close %s: %w", st.cfg.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// withoutRules is s without its per-caller rules: two servers that
// differ only in policy run the same way.
func withoutRules(s config.Server) config.Server {
	s.AllowScopes, s.ToolScopes, s.RateLimit = nil, nil, authz.Rate{}
	return s
}

// withGuard returns st's successor with cfg and guard: the same
// supervisor, stderr and per-client instances, which move to it.
func (st *server) withGuard(cfg config.Server, guard authz.Guard) *server {
	st.mu.Lock()
	defer st.mu.Unlock()
	next := &server{cfg: cfg, sup: st.sup, err: st.err, stderr: st.stderr, guard: guard, instances: st.instances}
	// An instance a client starts on st from now on is refused, not lost
	// to the host: the client's next request starts it on next.
	st.instances, st.retired = nil, true
	return next
}
