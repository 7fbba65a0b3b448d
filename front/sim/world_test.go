//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and simulated.

package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The simulated servers: perClient gets an instance of its own for each
// client of the front; shared serves them all.
const (
	perClient = "a"
	shared    = "b"
)

// world is the front's backends (front.Backends): a shared instance of
// each server, and the per-client instances the front asks for, each a
// supervisor of an in-memory server of its own whose tools record whose
// requests reach it.
type world struct {
	r *run

	mu        sync.Mutex
	sharedSup map[string]*conn.Supervisor
	servers   []*conntest.Server // every backend, to crash and close
	instances []*instanceOf      // the per-client instances, in start order
	maxInst   int
	// race, if set, is a client whose roots change while the next
	// instance starts (rootsRace).
	race *simClient
}

// rootsRace changes c's roots and lets the start go on once the front's
// read of them waits for the instance that starts (or after a while, if
// none does): the front's lock of the instance is held while it starts,
// and the start takes the client's lock for its roots.
//
// It waits by yielding, not on time: a goroutine blocked on a lock is
// not durably blocked, so simulated time stands still while one waits
// for the instance's lock.
func (w *world) rootsRace(c *simClient) {
	w.r.mu.Lock()
	uri := fmt.Sprintf("file:///%s/%d", c.name, len(c.roots))
	c.roots = append(c.roots, uri)
	n := len(c.roots)
	w.r.mu.Unlock()
	w.r.logf("%s: roots change to %d while an instance starts", c.name, n)
	w.r.wg.Go(func() { c.client.AddRoots(&mcp.Root{URI: uri}) })
	for i := range 600 {
		runtime.Gosched()
		if i%10 == 9 && goroutineIn("front.(*roots).read", "instance.(*Instance).Running") {
			return
		}
	}
}

// goroutineIn reports whether a goroutine's stack holds every one of
// funcs.
func goroutineIn(funcs ...string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		all := true
		for _, f := range funcs {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}

// instanceOf is one per-client instance: its record, supervisor and server.
type instanceOf struct {
	rec *InstanceRec
	sup *conn.Supervisor
	srv *conntest.Server
}

func (w *world) StatusOf(server string) (conn.Status, bool) {
	if sup, ok := w.Supervisor(server); ok {
		return sup.Status(), true
	}
	return conn.Status{}, false
}

func (w *world) Supervisor(server string) (*conn.Supervisor, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sup, ok := w.sharedSup[server]
	return sup, ok
}

func (w *world) Supervisors() []*conn.Supervisor {
	w.mu.Lock()
	defer w.mu.Unlock()
	return []*conn.Supervisor{w.sharedSup[perClient], w.sharedSup[shared]}
}

func (w *world) Isolation(server string) (bool, int) {
	return server != perClient, w.maxInst
}

func (w *world) Guard(string) authz.Guard { return authz.Guard{} }

// StartInstance starts an instance of server for the client configure is
// for, after the start's simulated latency.
func (w *world) StartInstance(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error) {
	w.mu.Lock()
	race := w.race
	w.race = nil
	w.mu.Unlock()
	if race != nil {
		w.rootsRace(race)
	}
	h := &attrHandler{}
	w.mu.Lock()
	rec := &InstanceRec{ID: len(w.instances) + 1, Server: server, Started: w.r.now(), Closed: -1, Served: map[string]time.Duration{}}
	w.mu.Unlock()
	srv := w.backend(rec)
	cfg := w.config(server, srv, slog.New(h))
	cfg.OnTransition = func(t conn.Transition) {
		if t.To == conn.Disposed {
			w.r.mu.Lock()
			if rec.Closed < 0 {
				rec.Closed = w.r.nowLocked()
			}
			w.r.mu.Unlock()
			w.r.logf("instance %d of %s (client %s) closed", rec.ID, server, rec.Owner)
		}
	}
	configure(&cfg)
	rec.Owner = cfg.Logger.Handler().(*attrHandler).subject()
	sup, err := conn.Start(ctx, cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	w.r.mu.Lock()
	w.r.h.Instances = append(w.r.h.Instances, rec)
	w.r.mu.Unlock()
	w.mu.Lock()
	w.instances = append(w.instances, &instanceOf{rec: rec, sup: sup, srv: srv})
	w.servers = append(w.servers, srv)
	w.mu.Unlock()
	w.r.logf("instance %d of %s started for client %s", rec.ID, server, rec.Owner)
	return sup, nil
}

// config is the configuration of an instance of server over srv: the
// classic era, so that a 2026-07-28 client's requests of it are bridged.
func (w *world) config(server string, srv *conntest.Server, log *slog.Logger) conn.Config {
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 5}
	return conn.Config{Name: server, Transport: srv.Transport(), Reconnect: &p, Logger: log,
		ProtocolVersion: conn.ClassicProtocolVersion}
}

// backend is a server whose tools answer with the tag of the request
// ("<client>#<n>") they got: "echo" that alone, "roots" with the roots of
// its session's client, "ask" with the answer to an elicitation that
// names the tag, "slow" after the time the request asks for. Each
// records that its instance (rec, nil for a shared one) served the
// client.
func (w *world) backend(rec *InstanceRec) *conntest.Server {
	srv := conntest.NewServer(conntest.Accept)
	type args struct {
		Tag  string `json:"tag"`
		Wait int    `json:"wait"` // milliseconds, for slow
	}
	tool := func(name string, do func(ctx context.Context, req *mcp.CallToolRequest, a args) (string, error)) {
		mcp.AddTool(srv.MCP, &mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			client, id, _ := strings.Cut(a.Tag, "#")
			served := func(at bool) {
				w.r.mu.Lock()
				defer w.r.mu.Unlock()
				now := w.r.nowLocked()
				if n, err := strconv.Atoi(id); err == nil && n >= 1 && n <= len(w.r.h.Requests) {
					q := w.r.h.Requests[n-1]
					q.Backend, q.AtBackend = now, at
				}
				if rec != nil {
					rec.Served[client] = now
				}
			}
			served(true)
			w.r.active(rec, 1)
			defer func() { served(false); w.r.active(rec, -1) }()
			text, err := do(ctx, req, a)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Tag + "|" + text}}}, nil, nil
		})
	}
	tool("echo", func(context.Context, *mcp.CallToolRequest, args) (string, error) { return "echo", nil })
	tool("roots", func(ctx context.Context, req *mcp.CallToolRequest, _ args) (string, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return "", err
		}
		uris := make([]string, 0, len(res.Roots))
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return "roots:" + strings.Join(uris, ","), nil
	})
	tool("ask", func(ctx context.Context, req *mcp.CallToolRequest, a args) (string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "for " + a.Tag, RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s:%v", res.Action, res.Content["name"]), nil
	})
	tool("slow", func(ctx context.Context, _ *mcp.CallToolRequest, a args) (string, error) {
		t := time.NewTimer(time.Duration(a.Wait) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return "slow", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	return srv
}

// startShared starts the shared instance of server.
func (w *world) startShared(ctx context.Context, server string, configure func(string, *conn.Config), reg *conn.ToolRegistry) error {
	srv := w.backend(nil)
	cfg := w.config(server, srv, slog.New(slog.DiscardHandler))
	cfg.Registry = reg
	configure(server, &cfg)
	sup, err := conn.Start(ctx, cfg)
	if err != nil {
		srv.Close()
		return err
	}
	w.mu.Lock()
	w.sharedSup[server] = sup
	w.servers = append(w.servers, srv)
	w.mu.Unlock()
	return nil
}

// running returns the instances whose supervisors run, in start order.
func (w *world) running() []*instanceOf {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*instanceOf
	for _, in := range w.instances {
		if in.sup.State() != conn.Disposed {
			out = append(out, in)
		}
	}
	return out
}

// close closes every supervisor and server.
func (w *world) close(ctx context.Context) error {
	w.mu.Lock()
	sups := []*conn.Supervisor{w.sharedSup[perClient], w.sharedSup[shared]}
	for _, in := range w.instances {
		sups = append(sups, in.sup)
	}
	servers := w.servers
	w.mu.Unlock()
	var errs []error
	for _, sup := range sups {
		if sup != nil {
			if err := sup.Close(ctx); err != nil && !errors.Is(err, conn.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	for _, s := range servers {
		s.Close()
	}
	return errors.Join(errs...)
}

// attrHandler discards records, and keeps the attributes its logger was
// given: the front names an instance's client in its logger (subject).
type attrHandler struct {
	attrs []slog.Attr
}

func (h *attrHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (h *attrHandler) Handle(context.Context, slog.Record) error { return nil }
func (h *attrHandler) WithGroup(string) slog.Handler             { return h }
func (h *attrHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrHandler{attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

// subject is the subject attribute the handler was given, or "?".
func (h *attrHandler) subject() string {
	for _, a := range h.attrs {
		if a.Key == "subject" {
			return a.Value.String()
		}
	}
	return "?"
}
