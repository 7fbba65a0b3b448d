package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The world is the simulated server: the tool list it serves, and every
// process the supervisors opened, each a fresh go-sdk mcp.Server (a
// restarted server keeps no session state) over a link of its own. A
// process follows its Proc; the world's steps change the tool list on
// every live process and crash or hang the newest.
type world struct {
	r *run

	mu      sync.Mutex
	tools   map[string]int // raw name -> version of its definition (the description names it)
	procs   []*process
	calm    bool
	execs   map[string]int // tool executions per call id
	retired map[int]bool   // processes a Close gave up on (ErrIncompleteShutdown, or its context ended)
}

func newWorld(r *run) *world {
	return &world{r: r, tools: map[string]int{"t0": 1}, execs: map[string]int{}, retired: map[int]bool{}}
}

// busyRetryAfter is the Retry-After of a process that refuses as busy.
const busyRetryAfter = 30 * time.Second

// toolDef is the definition the server lists for name at version v.
func toolDef(name string, v int) *mcp.Tool {
	t := &mcp.Tool{Name: name, Description: fmt.Sprintf("%s v%d", name, v),
		InputSchema: map[string]any{"type": "object"}}
	switch name {
	case "t1":
		t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	case "t2":
		t.Annotations = &mcp.ToolAnnotations{IdempotentHint: true}
	}
	return t
}

// safeToRepeat reports whether the tool's annotations let HoldCalls with
// RetryIdempotent send a call of it again.
func safeToRepeat(name string) bool { return name == "t1" || name == "t2" }

// listed is the server's tool list now, as "name=description" sorted.
func (w *world) listed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, v := range w.tools {
		out = append(out, name+"="+toolDef(name, v).Description)
	}
	slices.Sort(out)
	return out
}

// open is the Transport of every supervisor of the run: it starts the
// next process.
func (w *world) open(inc int) conn.Transport {
	return conn.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		w.mu.Lock()
		n := len(w.procs) + 1
		var plan Proc
		if n <= len(w.r.sched.Procs) && !w.calm {
			plan = w.r.sched.Procs[n-1]
		}
		var alive []int
		for _, p := range w.procs {
			if !p.gone() && !w.retired[p.n] {
				alive = append(alive, p.n)
			}
		}
		p := &process{w: w, n: n, inc: inc, plan: plan, started: plan, link: newLink(), exitedCh: make(chan struct{}),
			counts: map[string]int{}, lists: map[jsonrpc.ID]*listing{}, cursors: map[string]*listing{}, crashAfter: map[jsonrpc.ID]bool{}}
		w.procs = append(w.procs, p)
		if plan.Refuse == "" {
			p.srv = p.newServer(w.tools)
		}
		w.mu.Unlock()
		w.r.record(func(h *History) {
			h.Opens = append(h.Opens, Open{At: w.r.now(), Proc: n, Inc: inc, Alive: alive, Refused: plan.Refuse})
		})
		w.r.logf("process %d opened by supervisor %d%s", n, inc, plan.describe())
		switch plan.Refuse {
		case "error":
			p.exit()
			return nil, fmt.Errorf("sim: process %d failed to start", n)
		case "missing":
			p.exit()
			return nil, fmt.Errorf("sim: start process %d: %w", n, &exec.Error{Name: "sim-server", Err: exec.ErrNotFound})
		case "busy":
			p.exit()
			return nil, fmt.Errorf("sim: process %d: %w", n, &conn.HTTPError{StatusCode: http.StatusServiceUnavailable,
				Status: "503 Service Unavailable", Body: "busy", RetryAfter: busyRetryAfter})
		}
		p.start()
		return &clientTransport{p: p}, nil
	})
}

// change applies a tool-list step to the world and to every live process.
func (w *world) change(do, name string) {
	w.mu.Lock()
	switch do {
	case "add-tool":
		if _, ok := w.tools[name]; ok {
			w.mu.Unlock()
			return
		}
		w.tools[name] = 1
	case "remove-tool":
		if _, ok := w.tools[name]; !ok || name == "t0" {
			w.mu.Unlock()
			return
		}
		delete(w.tools, name)
	case "change-tool":
		if _, ok := w.tools[name]; !ok {
			w.mu.Unlock()
			return
		}
		w.tools[name]++
	}
	v, kept := w.tools[name]
	live := w.live()
	w.mu.Unlock()
	for _, p := range live {
		if kept {
			p.addTool(name, v)
		} else {
			p.srv.RemoveTools(name)
		}
	}
}

// live returns the processes whose server runs, under w.mu.
func (w *world) live() []*process {
	var out []*process
	for _, p := range w.procs {
		if p.srv != nil && !p.gone() {
			out = append(out, p)
		}
	}
	return out
}

// newest returns the newest live process that is not closing, or nil.
func (w *world) newest() *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.procs) - 1; i >= 0; i-- {
		if p := w.procs[i]; p.srv != nil && !p.gone() && !p.isClosing() {
			return p
		}
	}
	return nil
}

// setCalm ends every fault (with on), or lets the schedule's faults
// resume: hangs thaw, latencies drop, every process that outlived its
// close exits, and processes opened while calm are healthy.
func (w *world) setCalm(on bool) {
	w.mu.Lock()
	w.calm = on
	procs := slices.Clone(w.procs)
	w.mu.Unlock()
	if !on {
		return
	}
	for _, p := range procs {
		p.heal()
	}
}

func (w *world) isCalm() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calm
}

// retire marks the processes alive now as given up on by a Close that
// returned an error: a host that went on regardless may run the server
// twice, as conn documents.
func (w *world) retire(inc int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for _, p := range w.procs {
		if p.inc == inc && !p.gone() {
			w.retired[p.n] = true
			out = append(out, p.n)
		}
	}
	return out
}

// aliveOf returns the processes of supervisor inc that have not exited.
func (w *world) aliveOf(inc int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for _, p := range w.procs {
		if p.inc == inc && !p.gone() {
			out = append(out, p.n)
		}
	}
	return out
}

// executed counts one execution of a tool call by the server.
func (w *world) executed(id string) {
	w.mu.Lock()
	w.execs[id]++
	w.mu.Unlock()
}

// teardown ends every process, so that nothing of the run is left.
func (w *world) teardown() {
	w.mu.Lock()
	procs := slices.Clone(w.procs)
	w.calm = true
	w.mu.Unlock()
	for _, p := range procs {
		p.crash("teardown")
	}
}

// process is one simulated server process.
type process struct {
	w       *world
	n       int  // in the order of opening, from 1
	inc     int  // the supervisor (incarnation) that opened it
	plan    Proc // what it does; the world's calm clears it
	started Proc // what it was to do when it started
	link    *link
	srv     *mcp.Server // nil until started (never, for a refused start)

	mu         sync.Mutex
	exitedCh   chan struct{}
	exited     bool
	dying      bool // crashes at the end of this instant (crashSoon)
	closing    bool // stdin closed or terminated: it exits after ExitDelay
	terminated bool
	counts     map[string]int // requests received, by method
	hung       chan struct{}  // non-nil while hung; closed at the thaw
	held       []outMsg       // written while hung
	delayed    []outMsg       // waiting out the latency
	lists      map[jsonrpc.ID]*listing
	cursors    map[string]*listing
	crashAfter map[jsonrpc.ID]bool
	complete   [][]string // the complete listings it wrote, each "name=description" sorted
	listens    map[jsonrpc.ID]bool
	// deaf: a subscriptions/listen stream of the session was cancelled.
	// The go-sdk v1.8.0 server then drops every list-change subscription
	// of the session, whichever stream held it (fixed upstream by
	// go-sdk#1275), so it sends no tools/list_changed any more.
	deaf bool
	ss   *mcp.ServerSession
	subs map[string]bool
}

type outMsg struct {
	msg   jsonrpc.Message
	due   time.Time
	crash bool // crash once it is written
}

// listing is a tools/list the process answers page by page.
type listing struct{ tools []string }

// describe is the plan as a run's log shows it ("" for a healthy one).
func (p *Proc) describe() string {
	if *p == (Proc{}) {
		return ""
	}
	b, _ := json.Marshal(p)
	return " " + string(b)
}

// newServer is the process's go-sdk server, serving tools; under w.mu.
func (p *process) newServer(tools map[string]int) *mcp.Server {
	opts := &mcp.ServerOptions{
		PageSize: 2,
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			p.mu.Lock()
			if p.subs == nil {
				p.subs = map[string]bool{}
			}
			p.subs[req.Params.URI] = true
			p.mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			p.mu.Lock()
			delete(p.subs, req.Params.URI)
			p.mu.Unlock()
			return nil
		},
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sim", Version: fmt.Sprint(p.n)}, opts)
	for _, uri := range resourceURIs {
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "r"}}}, nil
		})
	}
	for _, name := range promptNames {
		srv.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	for name, v := range tools {
		p.addToolTo(srv, name, v)
	}
	return srv
}

// start connects the process's server to its link and arms its timed faults.
func (p *process) start() {
	ss, err := p.srv.Connect(context.Background(), &serverTransport{p: p}, nil)
	if err != nil {
		panic(fmt.Sprintf("sim: connecting the server of process %d: %v", p.n, err)) // the link is new: cannot fail
	}
	p.mu.Lock()
	p.ss = ss
	plan := p.plan
	p.mu.Unlock()
	if d := plan.CrashAfter; d > 0 {
		p.w.r.ag.after(d, func() { p.fault(func() { p.crash("crash-after") }) })
	}
	if d := plan.HangAfter; d > 0 {
		p.w.r.ag.after(d, func() { p.fault(func() { p.hang(plan.HangFor) }) })
	}
}

// fault runs f unless the world is calm.
func (p *process) fault(f func()) {
	if !p.w.isCalm() {
		f()
	}
}

// callArgs are the arguments of the simulated tools.
type callArgs struct {
	ID   string        `json:"id"`
	Work time.Duration `json:"work,omitempty"`
	Hang bool          `json:"hang,omitempty"`
}

func (p *process) addTool(name string, v int) { p.addToolTo(p.srv, name, v) }

func (p *process) addToolTo(srv *mcp.Server, name string, v int) {
	def := toolDef(name, v)
	def.Meta = mcp.Meta{"sim/proc": p.n}
	srv.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a callArgs
		_ = json.Unmarshal(req.Params.Arguments, &a)
		p.w.executed(a.ID)
		switch {
		case a.Hang:
			<-ctx.Done()
			return nil, ctx.Err()
		case a.Work > 0:
			done := make(chan struct{})
			p.w.r.ag.after(a.Work, func() { close(done) })
			select {
			case <-done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s ok from process %d", name, p.n)}}}, nil
	})
}

func (p *process) gone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

func (p *process) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// exit ends the process: its pipes close, and whoever waits for it hears.
func (p *process) exit() {
	p.mu.Lock()
	if p.exited {
		p.mu.Unlock()
		return
	}
	p.exited = true
	p.delayed, p.held = nil, nil
	if p.hung != nil {
		close(p.hung)
		p.hung = nil
	}
	close(p.exitedCh)
	p.mu.Unlock()
	p.link.cut()
	p.w.r.record(func(h *History) { h.Exits = append(h.Exits, Exit{At: p.w.r.now(), Proc: p.n}) })
}

// crash ends the process at once: what it had not read is lost, what it
// wrote is still read.
func (p *process) crash(why string) {
	if p.gone() {
		return
	}
	p.link.mu.Lock()
	p.link.toSrv.msgs = nil
	p.link.mu.Unlock()
	p.w.r.logf("process %d crashes (%s)", p.n, why)
	p.exit()
}

// shutDown is the process's end of its stdin or its termination: it
// exits ExitDelay later (Never: when the world calms).
func (p *process) shutDown(terminate bool) {
	p.mu.Lock()
	if terminate {
		p.terminated = true
	}
	if p.closing || p.exited {
		p.mu.Unlock()
		return
	}
	p.closing = true
	d := p.plan.ExitDelay
	p.mu.Unlock()
	p.link.cut()
	switch {
	case d == Never && !p.w.isCalm():
		p.w.r.logf("process %d ignores its shutdown", p.n)
	case d > 0 && !p.w.isCalm():
		p.w.r.ag.after(d, p.exit)
	default:
		p.exit()
	}
}

// heal ends the process's faults: a hang thaws, the latency ends, and a
// process that outlived its close exits.
func (p *process) heal() {
	p.mu.Lock()
	p.plan = Proc{}
	closing := p.closing
	p.mu.Unlock()
	p.thaw()
	p.flushDelayed()
	if closing {
		p.exit()
	}
}

// hang stops the process answering for d (0: until the world calms).
func (p *process) hang(d time.Duration) {
	p.mu.Lock()
	if p.exited || p.hung != nil {
		p.mu.Unlock()
		return
	}
	p.hung = make(chan struct{})
	p.mu.Unlock()
	if d > 0 {
		p.w.r.logf("process %d hangs for %v", p.n, d)
	} else {
		p.w.r.logf("process %d hangs until the world calms", p.n)
	}
	if d > 0 {
		p.w.r.ag.after(d, p.thaw)
	}
}

// thaw ends a hang: what the process wrote meanwhile goes out, in order.
func (p *process) thaw() {
	p.mu.Lock()
	if p.hung == nil {
		p.mu.Unlock()
		return
	}
	close(p.hung)
	p.hung = nil
	held := p.held
	p.held = nil
	crash := false
	for _, m := range held {
		crash = p.sendLocked(m) || crash
	}
	p.mu.Unlock()
	if crash {
		p.crash("after answering")
	}
}

// received is a request arriving at the process; it reports whether the
// process crashed on it.
func (p *process) received(req *jsonrpc.Request) (crashed bool) {
	p.mu.Lock()
	if p.dying {
		p.mu.Unlock()
		return true
	}
	p.counts[req.Method]++
	n := p.counts[req.Method]
	switch req.Method {
	case "subscriptions/listen":
		if p.listens == nil {
			p.listens = map[jsonrpc.ID]bool{}
		}
		p.listens[req.ID] = true
	case "notifications/cancelled":
		var params struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &params) == nil {
			if id, err := jsonrpc.MakeID(params.RequestID); err == nil && p.listens[id] {
				p.deaf = true
			}
		}
	}
	plan := p.plan
	if req.Method == "tools/list" && req.IsCall() {
		var params struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(req.Params, &params)
		l := p.cursors[params.Cursor]
		if l == nil || params.Cursor == "" {
			l = &listing{}
		}
		delete(p.cursors, params.Cursor)
		p.lists[req.ID] = l
	}
	hit := func(pt *Point) bool { return pt != nil && pt.Method == req.Method && pt.N == n }
	crashNow := plan.DieOnDiscover && req.Method == "server/discover" || hit(plan.CrashOn) && !plan.CrashOn.After
	if hit(plan.CrashOn) && plan.CrashOn.After && req.IsCall() {
		p.crashAfter[req.ID] = true
	}
	p.mu.Unlock()
	if p.w.isCalm() {
		return false
	}
	if hit(plan.HangOn) {
		p.hang(plan.HangFor)
	}
	if crashNow {
		p.crashSoon("on " + req.Method)
		return true
	}
	return false
}

// crashSoon is a crash the process itself decides (on a request, after
// an answer): it reads and writes nothing more, and the driver crashes it
// from the agenda at this instant, once everything else that woke at it
// is done. Cut at once from the server's own goroutine, the link's end
// raced conn's goroutines of the same instant (a re-sync's request sent
// or refused, the loss's cause named by one goroutine or another), and a
// replay could differ.
func (p *process) crashSoon(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dyingLocked(why)
}

func (p *process) dyingLocked(why string) {
	if p.dying || p.exited {
		return
	}
	p.dying = true
	p.w.r.ag.after(0, func() { p.crash(why) })
}

// wireText is a message as the wire log shows it.
func wireText(msg jsonrpc.Message) string {
	b, _ := jsonrpc.EncodeMessage(msg)
	if len(b) > 300 {
		b = append(b[:300], "..."...)
	}
	return string(b)
}

// write is the process writing msg.
func (p *process) write(msg jsonrpc.Message) error {
	if p.w.r.opts.Wire {
		p.w.r.logf("process %d -> %s", p.n, wireText(msg))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return errLinkDown
	}
	if p.dying {
		return nil // dead already: nothing more reaches the pipe
	}
	m := outMsg{msg: msg}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if l := p.lists[resp.ID]; l != nil {
			delete(p.lists, resp.ID)
			p.page(l, resp)
		}
		if p.crashAfter[resp.ID] {
			delete(p.crashAfter, resp.ID)
			m.crash = true
		}
	}
	if p.hung != nil {
		p.held = append(p.held, m)
		return nil
	}
	if p.sendLocked(m) {
		p.dyingLocked("after answering")
	}
	return nil
}

// page records one page of a listing.
func (p *process) page(l *listing, resp *jsonrpc.Response) {
	if resp.Error != nil {
		return
	}
	var res mcp.ListToolsResult
	if json.Unmarshal(resp.Result, &res) != nil {
		return
	}
	for _, t := range res.Tools {
		l.tools = append(l.tools, t.Name+"="+t.Description)
	}
	if res.NextCursor != "" {
		p.cursors[res.NextCursor] = l
		return
	}
	done := slices.Clone(l.tools)
	slices.Sort(done)
	p.complete = append(p.complete, done)
}

// completeListings returns the complete listings the process wrote.
func (p *process) completeListings() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.complete)
}

// sendLocked sends m now, or after the latency (on the world's agenda),
// in order, and reports whether the process must crash now that m is
// written.
func (p *process) sendLocked(m outMsg) (crash bool) {
	if d := p.plan.Latency; d > 0 || len(p.delayed) > 0 {
		m.due = time.Now().Add(d)
		p.delayed = append(p.delayed, m)
		p.w.r.ag.after(d, p.deliver)
		return false
	}
	return p.link.push(&p.link.toCli, m.msg) == nil && m.crash
}

// deliver sends the delayed messages that are due, in order.
func (p *process) deliver() {
	p.mu.Lock()
	crash := false
	for len(p.delayed) > 0 && !p.exited && !crash && !p.delayed[0].due.After(time.Now()) {
		m := p.delayed[0]
		p.delayed = p.delayed[1:]
		crash = p.link.push(&p.link.toCli, m.msg) == nil && m.crash
	}
	p.mu.Unlock()
	if crash {
		p.crash("after answering")
	}
}

// flushDelayed sends what waits out a latency now (the world calmed).
func (p *process) flushDelayed() {
	p.mu.Lock()
	for i := range p.delayed {
		p.delayed[i].due = time.Time{}
	}
	p.mu.Unlock()
	p.deliver()
}

// isDeaf reports whether the process's server stopped sending list changes.
func (p *process) isDeaf() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deaf
}

// subscribed returns the resources the process's server was subscribed to.
func (p *process) subscribed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for uri := range p.subs {
		out = append(out, uri)
	}
	slices.Sort(out)
	return out
}

// serverTransport is the process's side of its link.
type serverTransport struct{ p *process }

func (t *serverTransport) Connect(context.Context) (mcp.Connection, error) {
	return &serverConn{p: t.p}, nil
}

type serverConn struct{ p *process }

func (c *serverConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	p := c.p
	for {
		if err := c.waitThaw(ctx); err != nil {
			return nil, err
		}
		msg, err := p.link.pop(ctx, &p.link.toSrv)
		if err != nil {
			return nil, err
		}
		if p.w.r.opts.Wire {
			p.w.r.logf("process %d <- %s", p.n, wireText(msg))
		}
		if req, ok := msg.(*jsonrpc.Request); ok && p.received(req) {
			continue // crashed: the next pop reads EOF
		}
		if err := c.waitThaw(ctx); err != nil {
			return nil, err
		}
		return msg, nil
	}
}

// waitThaw waits while the process hangs.
func (c *serverConn) waitThaw(ctx context.Context) error {
	p := c.p
	p.mu.Lock()
	h := p.hung
	p.mu.Unlock()
	if h == nil {
		return nil
	}
	select {
	case <-h:
		return nil
	case <-p.link.down:
		return errLinkDown
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *serverConn) Write(_ context.Context, msg jsonrpc.Message) error { return c.p.write(msg) }

// Close is the server's session ending: the process's end of its stdin.
func (c *serverConn) Close() error {
	c.p.shutDown(false)
	return nil
}

func (c *serverConn) SessionID() string { return "" }

// clientTransport is what conn's Transport.Open returns: the client's
// side of the link, and the process as a conn.Terminator.
type clientTransport struct {
	p    *process
	once sync.Once
}

func (t *clientTransport) Connect(context.Context) (mcp.Connection, error) {
	var c mcp.Connection
	t.once.Do(func() {
		p := t.p
		c = &end{l: p.link, in: &p.link.toCli, out: &p.link.toSrv, closer: func() error {
			p.shutDown(false)
			p.mu.Lock()
			fails := p.plan.CloseFails
			p.mu.Unlock()
			if fails {
				return errors.New("sim: close failed")
			}
			return nil
		}}
	})
	if c == nil {
		return nil, errors.New("sim: a transport connects once")
	}
	return c, nil
}

// Terminate implements conn.Terminator.
func (t *clientTransport) Terminate() <-chan struct{} {
	p := t.p
	p.w.r.record(func(h *History) { h.Terminates = append(h.Terminates, Terminate{At: p.w.r.now(), Proc: p.n}) })
	p.shutDown(true)
	return p.exitedCh
}

var _ conn.Terminator = (*clientTransport)(nil)
