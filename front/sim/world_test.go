//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed, and simulated.

package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The simulated servers: perClient gets an instance of its own for each
// client of the front; shared serves them all.
const (
	perClient = "a"
	shared    = "b"
)

// world is the front's backends (front.Backends): a real host.Host of
// two servers, a per-client one and a shared one, started from a config
// file and reloaded as serve reloads it, by a host.Watcher of the file
// (whose changes the driver sends, as fsnotify would), whose supervisors run
// over in-memory servers (the host's starters swap each conn.Config's
// transport for one), each of which records whose requests reach it.
// Everything else of a supervisor's configuration is the host's: its
// registry, logger, the front's Configure, per-client instances kept,
// retired and closed by the host on a reload.
type world struct {
	*host.Host
	r *run

	path     string        // the config file
	changes  chan struct{} // the watcher's changes (host.WatchOptions.Changes)
	reloaded chan error    // the watcher's reloads (host.WatchOptions.Reloaded)
	watched  chan struct{} // closed once the watcher's Run returned

	mu        sync.Mutex
	cfg       config.Config               // written last
	applied   host.Changes                // what the host's last Apply changed
	shared    map[string]*conntest.Server // each shared instance's server now
	eras      []*conntest.Server          // the shared server's instances for 2026-07-28 clients
	all       []*conntest.Server          // every server made, to close at the end
	instances []*instanceOf               // the per-client instances, in start order
	maxInst   int
	gen       int // reloads that restart a server
	// race, if set, is a client whose roots change while the next
	// instance starts (rootsRace).
	race *simClient
}

// newWorld makes the host, whose config file is path; start starts it
// once the front exists.
func newWorld(r *run, maxInst int, path string) *world {
	w := &world{r: r, shared: map[string]*conntest.Server{}, maxInst: maxInst, path: path,
		changes: make(chan struct{}), reloaded: make(chan error, 1), watched: make(chan struct{})}
	w.cfg = config.Config{Servers: []config.Server{w.server(perClient, 0, authz.Rate{}), w.server(shared, 0, authz.Rate{})}}
	return w
}

// server is the configuration of server name at restart gen, with rate.
func (w *world) server(name string, gen int, rate authz.Rate) config.Server {
	s := config.Server{Name: name, Type: config.TypeStdio, Command: "sim-" + name, Env: []string{fmt.Sprintf("GEN=%d", gen)},
		Reconnect: policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 5},
		Isolation: config.IsolationShared, RateLimit: rate}
	if name == perClient {
		s.Isolation, s.MaxInstances = config.IsolationPerClient, w.maxInst
	}
	return s
}

// hostOptions are the options of the world's host; reg is the front's.
func (w *world) hostOptions(reg *conn.ToolRegistry, f func() *front.Front) host.Options {
	return host.Options{Path: w.path, Logger: slog.New(&attrHandler{}), Registry: reg, Clock: clock.New(),
		Configure: func(server string, c *conn.Config) { f().Configure(server, c) },
		OnApply: func(ch host.Changes) {
			w.mu.Lock()
			w.applied = ch
			w.mu.Unlock()
			f().Update()
		},
		Start:         w.startShared,
		StartInstance: w.startInstance}
}

// start writes the config file and starts the host from it, as serve
// does (config.Load, Host.Start), then watches the file (Host.Watch,
// Watcher.Run) until ctx ends. An error of Start leaves the host
// serving what started, and watched.
func (w *world) start(ctx context.Context) error {
	if err := w.write(); err != nil {
		close(w.watched)
		return err
	}
	cfg, err := config.Load(w.path, nil)
	if err != nil {
		close(w.watched)
		return err
	}
	started := w.Start(ctx, cfg)
	// The shortest debounce: the reload follows the change at once (a
	// nanosecond later), as Host.Apply did before the watcher ran here,
	// so the seeds kept their schedules. host's TestWatchChanges
	// checks the debounce itself.
	wa, err := w.Watch(host.WatchOptions{Debounce: time.Nanosecond, Changes: w.changes,
		Reloaded: func(err error) { w.reloaded <- err }})
	if err != nil {
		close(w.watched)
		return errors.Join(started, err)
	}
	go func() {
		defer close(w.watched)
		_ = wa.Run(ctx)
	}()
	return started
}

// write writes w.cfg to the config file, in the layout config.Load
// reads, and checks that the file loads as w.cfg.
func (w *world) write() error {
	w.mu.Lock()
	cfg := config.Config{Servers: slices.Clone(w.cfg.Servers)}
	w.mu.Unlock()
	servers := map[string]any{}
	for _, s := range cfg.Servers {
		env := map[string]string{}
		for _, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		p := s.Reconnect
		e := map[string]any{"command": s.Command, "env": env, "isolation": s.Isolation,
			"reconnect": map[string]any{"enabled": p.Enabled, "initialDelayMs": p.InitialDelay.Milliseconds(),
				"maxDelayMs": p.MaxDelay.Milliseconds(), "maxAttempts": p.MaxAttempts, "jitter": p.Jitter}}
		if s.MaxInstances > 0 {
			e["maxInstances"] = s.MaxInstances
		}
		if s.RateLimit.N > 0 {
			e["rateLimit"] = fmt.Sprintf("%d/s", s.RateLimit.N)
		}
		servers[s.Name] = e
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		return err
	}
	if err := os.WriteFile(w.path, data, 0o600); err != nil {
		return err
	}
	loaded, err := config.Load(w.path, nil)
	if err != nil {
		return err
	}
	for i := range loaded.Servers {
		loaded.Servers[i].Key = ""
	}
	if !reflect.DeepEqual(loaded.Servers, cfg.Servers) {
		return fmt.Errorf("the config file loads as %+v, not as written: %+v", loaded.Servers, cfg.Servers)
	}
	return nil
}

// reload changes the config file, as an operator would, and tells the
// watcher, as fsnotify would, then waits for its reload: kind 0 restarts
// the per-client server, 1 the shared one (the host closes it and every
// instance of it, then starts it anew), 2 changes the per-client
// server's rate limit alone (it keeps running).
func (w *world) reload(ctx context.Context, kind int) {
	w.mu.Lock()
	cfg := config.Config{Servers: slices.Clone(w.cfg.Servers)}
	switch kind {
	case 0, 1:
		w.gen++
		rate := cfg.Servers[kind].RateLimit
		cfg.Servers[kind] = w.server(cfg.Servers[kind].Name, w.gen, rate)
	default:
		rate := authz.Rate{N: 1000, Per: time.Second}
		if cfg.Servers[0].RateLimit.N != 0 {
			rate = authz.Rate{}
		}
		cfg.Servers[0].RateLimit = rate
	}
	w.cfg = cfg
	w.applied = host.Changes{}
	w.mu.Unlock()
	if err := w.write(); err != nil {
		w.r.logf("reload: the config file: %v", err)
		return
	}
	select {
	case w.changes <- struct{}{}:
	case <-w.watched:
		w.r.logf("reload: the config file is not watched")
		return
	}
	select {
	case err := <-w.reloaded:
		w.mu.Lock()
		ch := w.applied
		w.mu.Unlock()
		w.r.logf("reload: restarted %v, rules %v, unchanged %v: %v", ch.Restarted, ch.Rules, ch.Unchanged, err)
	case <-ctx.Done():
	}
}

// crashable is every server a crash may hit: the shared instances' now,
// by name, the latest 2026-07-28 instance's of the shared server, then
// the per-client instances', in start order.
func (w *world) crashable() []*conntest.Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := []*conntest.Server{w.shared[perClient], w.shared[shared]}
	if len(w.eras) > 0 {
		out = append(out, w.eras[len(w.eras)-1])
	}
	for _, in := range w.instances {
		out = append(out, in.srv)
	}
	return slices.DeleteFunc(out, func(s *conntest.Server) bool { return s == nil })
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

// StartInstance is the host's, after a roots race if one is set: the
// front holds its instance's lock while it starts, and the host's
// configure reads the client's roots under the client's lock.
func (w *world) StartInstance(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error) {
	w.mu.Lock()
	race := w.race
	w.race = nil
	w.mu.Unlock()
	if race != nil {
		w.rootsRace(race)
	}
	return w.Host.StartInstance(ctx, server, configure)
}

// simulated makes cfg's transport an in-memory server's. An instance
// whose era the front left to conn (a 2026-07-28 client's own) speaks
// the classic one, so that its client's requests of it are bridged.
func simulated(cfg *conn.Config, srv *conntest.Server) {
	cfg.Transport = srv.Transport()
	if cfg.ProtocolVersion == "" {
		cfg.ProtocolVersion = conn.ClassicProtocolVersion
	}
}

// startInstance is the host's Options.StartInstance: it starts a
// per-client instance, as the host and the front configured it, over a
// server of its own.
func (w *world) startInstance(ctx context.Context, cfg conn.Config) (*conn.Supervisor, error) {
	if cfg.Name == shared {
		return w.startEra(ctx, cfg)
	}
	w.mu.Lock()
	rec := &InstanceRec{ID: len(w.instances) + 1, Server: cfg.Name, Started: w.r.now(), Closed: -1, Served: map[string]time.Duration{}}
	w.mu.Unlock()
	srv := w.backend(rec)
	simulated(&cfg, srv)
	prev := cfg.OnTransition
	cfg.OnTransition = func(t conn.Transition) {
		if prev != nil {
			prev(t)
		}
		if t.To == conn.Disposed {
			w.r.mu.Lock()
			if rec.Closed < 0 {
				rec.Closed = w.r.nowLocked()
			}
			w.r.mu.Unlock()
			w.r.logf("instance %d of %s (client %s) closed", rec.ID, rec.Server, rec.Owner)
		}
	}
	if h, ok := cfg.Logger.Handler().(*attrHandler); ok {
		rec.Owner = h.subject()
	}
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
	w.all = append(w.all, srv)
	w.mu.Unlock()
	w.r.logf("instance %d of %s started for client %s", rec.ID, rec.Server, rec.Owner)
	return sup, nil
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

// startEra starts the shared server's instance for the 2026-07-28
// clients (the front's, through the host): shared by them, so no client
// owns it.
func (w *world) startEra(ctx context.Context, cfg conn.Config) (*conn.Supervisor, error) {
	srv := w.backend(nil)
	cfg.Transport = srv.Transport() // in the era the front asks for
	sup, err := conn.Start(ctx, cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	w.mu.Lock()
	w.eras = append(w.eras, srv)
	w.all = append(w.all, srv)
	w.mu.Unlock()
	w.r.logf("the 2026-07-28 instance of %s started", cfg.Name)
	return sup, nil
}

// startShared is the host's Options.Start: it starts a server's shared
// instance, as the host and the front configured it, over a server of
// its own.
func (w *world) startShared(ctx context.Context, cfg conn.Config) (*conn.Supervisor, error) {
	srv := w.backend(nil)
	simulated(&cfg, srv)
	sup, err := conn.Start(ctx, cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	w.mu.Lock()
	w.shared[cfg.Name] = srv
	w.all = append(w.all, srv)
	w.mu.Unlock()
	return sup, nil
}

// close closes the host, which closes every supervisor, and every server.
func (w *world) close(ctx context.Context) error {
	err := w.Close(ctx)
	w.mu.Lock()
	all := w.all
	w.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
	return err
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
