package front

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/front/internal/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The front serves the tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663) on its own: a client that declares the extension (in its
// request's _meta client capabilities, or its session's) and calls a
// tool whose server marks it as one that may run as a task (the tool's
// _meta under the extension's name says {"taskSupport": "optional"} or
// "required": go-sdk's Tool has no execution field to carry it) gets a
// task handle at once (resultType "task"), unless the call ends within
// taskHeadStart, or asks for input first and its mark says
// "inputBeforeTask": true (that round goes to the client as it came,
// and the task begins with the next round trip). The call runs
// on under the front, detached from the client's request and stream;
// its status and outcome are kept for the caller (package
// front/internal/tasks: bounded in count, bytes and time) for
// tasks/get, its backend's input requests are answered with
// tasks/update, and tasks/cancel cancels it on the backend. A caller is
// the request's subject; without one, the session (or, on 2026-07-28,
// every anonymous client as one). Tasks are kept in this process only:
// another replica does not know them.

// taskExtension is the extension's name, in capabilities and in a tool's
// _meta.
const taskExtension = "io.modelcontextprotocol/tasks"

// taskHeadStart is how long a tool call that may be a task runs before
// it is made one: one that ends within it is answered as it came (the
// extension allows the immediate result).
const taskHeadStart = 100 * time.Millisecond

// taskStore is the front's store of tasks, made on first use.
func (f *Front) taskStore() *tasks.Store {
	f.tasks.once.Do(func() { f.tasks.store = tasks.New(tasks.Options{Clock: f.opts.Clock}) })
	return f.tasks.store
}

// taskOwner is whose a task of c's request with extra is.
func (c *client) taskOwner(extra *mcp.RequestExtra) string {
	caller := c.callerOf(extra)
	switch {
	case c.kind == stdioClient:
		return "stdio"
	case caller.Operator:
		return "operator:" + caller.Subject
	case caller.Subject != "":
		return "subject:" + caller.Subject
	case c.kind == subjectClient:
		return "anonymous" // a 2026-07-28 client without a credential: every one is this caller
	}
	return fmt.Sprintf("session:%d", c.id)
}

// forgetTasks removes the tasks of c when it ends and no one else can
// ever fetch them: the stdio front's client, or a session without a
// credential.
func (c *client) forgetTasks() {
	switch {
	case c.kind == stdioClient:
		c.f.taskStore().Forget("stdio") // the stdio front's one client: its run is over
	case c.kind == sessionClient && c.subject == "":
		c.f.taskStore().Forget(fmt.Sprintf("session:%d", c.id))
	}
}

// closeTasks ends every task (the front closes).
func (f *Front) closeTasks() { f.taskStore().Close() }

// declaresTasks reports whether req's client declared the extension: in
// the request's _meta, or at its session's initialization.
func declaresTasks(req mcp.Request) bool {
	if p := req.GetParams(); p != nil {
		if caps, ok := p.GetMeta()[mcp.MetaKeyClientCapabilities]; ok && caps != nil {
			var decl struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			}
			if b, err := json.Marshal(caps); err == nil && json.Unmarshal(b, &decl) == nil {
				if _, ok := decl.Extensions[taskExtension]; ok {
					return true
				}
			}
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if p := ss.InitializeParams(); p != nil && p.Capabilities != nil {
			_, ok := p.Capabilities.Extensions[taskExtension]
			return ok
		}
	}
	return false
}

// taskMark is what a tool's _meta says of tasks, under the extension's
// name.
type taskMark struct {
	// Support is "optional" or "required"; "" (or anything else) never
	// makes the tool's calls tasks.
	Support string `json:"taskSupport"`
	// InputFirst says the tool asks for input in its first result before
	// its work begins (a multi round-trip round, SEP-2322): that round
	// goes to the client as it came, and the task begins with the next.
	InputFirst bool `json:"inputBeforeTask"`
}

// taskMarkOf is the task mark of the tool served to c as name.
func (c *client) taskMarkOf(name string) taskMark {
	c.view.mu.Lock()
	def := c.view.served[name]
	c.view.mu.Unlock()
	var d struct {
		Meta map[string]taskMark `json:"_meta"`
	}
	if len(def) == 0 || json.Unmarshal(def, &d) != nil {
		return taskMark{}
	}
	m := d.Meta[taskExtension]
	if m.Support != "optional" && m.Support != "required" {
		return taskMark{}
	}
	return m
}

// missingTasks answers a call of a tool that runs only as a task from a
// client that did not declare the extension.
func missingTasks(tool string) error {
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("tool %q runs only as a task: declare the client capability extensions[%q]", tool, taskExtension),
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + taskExtension + `":{}}}}`)}
}

// tasksMiddleware runs as tasks the tool calls that may be (see above).
func (c *client) tasksMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if slices.Contains(taskMethods, method) {
			return c.serveTaskMethod(method, req)
		}
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		mark := c.taskMarkOf(r.Params.Name)
		switch {
		case mark.Support == "":
			return next(ctx, method, req)
		case !declaresTasks(req) && mark.Support == "required":
			return nil, missingTasks(r.Params.Name)
		case !declaresTasks(req):
			return next(ctx, method, req)
		}
		return c.runTask(ctx, next, r, mark)
	}
}

// outcome is what one round of a task's call came to.
type taskOutcome struct {
	res  mcp.Result
	err  error
	task *tasks.View // the task made of the call, if the call's round made one
}

// handoff settles whether a call is a task: the request that made it
// waits for its first outcome, for taskHeadStart at most.
type handoff struct {
	mu      sync.Mutex
	decided bool   // answered as it came, made a task, or abandoned
	id      string // the task, once made
	first   chan taskOutcome
}

// runTask runs r's call under the front, detached from ctx, and answers
// with its task, or with its outcome if it came within taskHeadStart. A
// client gone within the head start never learns its task: go-sdk's
// stateless handler does not end ctx when a client's connection drops,
// so such a task runs on, bounded like any by the store's count and TTL.
func (c *client) runTask(ctx context.Context, next mcp.MethodHandler, r *mcp.CallToolRequest, mark taskMark) (mcp.Result, error) {
	store := c.f.taskStore()
	owner := c.taskOwner(r.Extra)
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &handoff{first: make(chan taskOutcome, 1)}
	release := c.holdTask()
	c.f.wg.Go(func() {
		defer release()
		defer cancel()
		c.drive(tctx, next, r, h, store, owner, cancel, mark.InputFirst)
	})
	timer := c.f.opts.Clock.Timer(taskHeadStart)
	defer timer.Stop()
	if c.f.tasks.armed != nil {
		c.f.tasks.armed()
	}
	select {
	case o := <-h.first:
		return taskAnswer(o)
	case <-timer.C:
	case <-ctx.Done():
		h.mu.Lock()
		id, decided := h.id, h.decided
		h.decided = true
		h.mu.Unlock()
		if id != "" {
			store.Cancel(owner, id) // the client never heard of it
		} else if !decided {
			cancel()
		}
		return nil, ctx.Err()
	}
	h.mu.Lock()
	if h.decided {
		h.mu.Unlock()
		return taskAnswer(<-h.first)
	}
	v, err := store.Create(owner, cancel)
	if err != nil {
		h.mu.Unlock()
		if mark.Support == "required" {
			cancel()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %q: not run: %v; try again later", r.Params.Name, err)}
		}
		// Not a task: the call is answered when it ends.
		select {
		case o := <-h.first:
			return taskAnswer(o)
		case <-ctx.Done():
			cancel()
			return nil, ctx.Err()
		}
	}
	h.decided, h.id = true, v.ID
	h.mu.Unlock()
	return wireTask(v, false), nil
}

// taskAnswer is what the request that made a call gets of its first
// outcome.
func taskAnswer(o taskOutcome) (mcp.Result, error) {
	if o.task != nil {
		return wireTask(*o.task, false), nil
	}
	return o.res, o.err
}

// inputOf is the input_required result res is, or nil.
func inputOf(res mcp.Result, err error) *mcp.CallToolResult {
	r, ok := res.(*mcp.CallToolResult)
	if err != nil || !ok || r == nil || len(r.InputRequests) == 0 {
		return nil
	}
	return r
}

// drive runs a task's call, round after round, and reports each outcome:
// to the request that made it while it waits (see handoff), then to the
// store.
func (c *client) drive(ctx context.Context, next mcp.MethodHandler, r *mcp.CallToolRequest, h *handoff,
	store *tasks.Store, owner string, cancel context.CancelFunc, inputFirst bool) {
	for {
		res, err := next(ctx, "tools/call", r)
		in := inputOf(res, err)
		made := false
		h.mu.Lock()
		if !h.decided {
			h.decided = true
			var v tasks.View
			var cerr error
			if in != nil && !inputFirst {
				// The backend asked for input: a task carries it.
				v, cerr = store.Create(owner, cancel)
			}
			if in == nil || inputFirst || cerr != nil {
				// A result, an error, the input round of a tool that asks
				// before its work begins, or no room for a task: the
				// client gets it as it came.
				h.first <- taskOutcome{res: res, err: err}
				h.mu.Unlock()
				return
			}
			h.id, made = v.ID, true
		}
		id := h.id
		h.mu.Unlock()
		if id == "" {
			return // abandoned before it was a task
		}
		if in == nil {
			store.Finish(id, res, err)
			return
		}
		ready := store.Ask(id, in.InputRequests, in.RequestState)
		if made {
			v, _ := store.Get(owner, id)
			h.first <- taskOutcome{task: &v}
		}
		if ready == nil {
			c.bridges.Drop(in.RequestState) // cancelled or expired meanwhile
			return
		}
		select {
		case answers := <-ready:
			p := *r.Params
			p.InputResponses, p.RequestState = answers, in.RequestState
			r = &mcp.CallToolRequest{Session: r.Session, Params: &p, Extra: r.Extra}
		case <-ctx.Done():
			c.bridges.Drop(in.RequestState) // its call on the backend ends too
			store.Finish(id, nil, ctx.Err())
			return
		}
	}
}

// holdTask keeps a modern client from its idle end while its task runs.
func (c *client) holdTask() func() {
	if c.kind != subjectClient {
		return func() {}
	}
	return c.hold(time.Duration(c.f.tasks.idle.Load()))
}

// wireTask is v on the wire: a CreateTaskResult (resultType "task"), or,
// detailed, a tasks/get result (resultType "complete") with the outcome
// or the pending input requests.
type wireTaskResult struct {
	mcp.ResultBase
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         tasks.Status        `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage     `json:"result,omitempty"`
	Error          *jsonrpc.Error      `json:"error,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
}

func wireTask(v tasks.View, detailed bool) *wireTaskResult {
	w := &wireTaskResult{ResultType: "task", TaskID: v.ID, Status: v.Status, StatusMessage: v.Message,
		CreatedAt: v.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: v.Updated.UTC().Format(time.RFC3339Nano),
		TTLMs: v.TTL.Milliseconds(), PollIntervalMs: v.PollInterval.Milliseconds()}
	if detailed {
		w.ResultType = "complete"
		w.Result, w.Error = v.Result, v.Error
		if len(v.InputRequests) > 0 {
			w.InputRequests = v.InputRequests
		}
	}
	return w
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// ackResult is the empty acknowledgement of tasks/update and tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskMethods are the extension's methods the front serves.
var taskMethods = []string{"tasks/get", "tasks/update", "tasks/cancel"}

// addTaskMethods makes s take tasks/get, tasks/update and tasks/cancel;
// tasksMiddleware serves them (a custom method's handler has no
// RequestExtra, which names the caller).
func (c *client) addTaskMethods(s *mcp.Server) {
	for _, method := range taskMethods {
		err := mcp.AddReceivingCustomMethod(s, method, func(context.Context, *mcp.ServerSession, *taskParams) (*ackResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + " is served by the front's middleware"}
		})
		if err != nil {
			c.f.opts.Logger.Error("tasks: "+method+" not served", "error", err)
		}
	}
}

// serveTaskMethod answers tasks/get, tasks/update or tasks/cancel for
// the caller of req.
func (c *client) serveTaskMethod(method string, req mcp.Request) (mcp.Result, error) {
	p, ok := req.GetParams().(*taskParams)
	if !ok || p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params must be an object with taskId"}
	}
	if !declaresTasks(req) {
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
			Message: fmt.Sprintf("%s: declare the client capability extensions[%q] to use tasks", method, taskExtension),
			Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + taskExtension + `":{}}}}`)}
	}
	extra := req.GetExtra()
	if extra != nil {
		if err := headerMismatch(extra.Header, p.TaskID); err != nil {
			return nil, err
		}
	}
	store, owner := c.f.taskStore(), c.taskOwner(extra)
	switch method {
	case "tasks/get":
		v, ok := store.Get(owner, p.TaskID)
		if !ok {
			return nil, unknownTask(p.TaskID)
		}
		return wireTask(v, true), nil
	case "tasks/update":
		answers := mcp.InputResponseMap{}
		for k, raw := range p.InputResponses {
			var one mcp.InputResponseMap
			b, _ := json.Marshal(map[string]json.RawMessage{k: raw}) // raw JSON always marshals
			if err := json.Unmarshal(b, &one); err != nil {
				if store.Awaits(owner, p.TaskID, k) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tasks/update: inputResponses[%q]: %v", k, err)}
				}
				continue // an answer to nothing asked is ignored
			}
			answers[k] = one[k]
		}
		ok = store.Answer(owner, p.TaskID, answers)
	default:
		ok = store.Cancel(owner, p.TaskID)
	}
	if !ok {
		return nil, unknownTask(p.TaskID)
	}
	return &ackResult{ResultType: "complete"}, nil
}

// unknownTask answers a task id the caller has no task of.
func unknownTask(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"taskId %q names no task of yours in mcpfsm: it never was, expired (tasks are kept %v from their creation), or is another caller's",
		id, tasks.DefaultTTL)}
}

// headerMismatch checks the Mcp-Name header of a tasks request against
// its taskId (SEP-2243, SEP-2663).
func headerMismatch(h interface{ Get(string) string }, id string) error {
	if h == nil {
		return nil
	}
	if v := strings.TrimSpace(h.Get("Mcp-Name")); v != "" && v != id {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("Mcp-Name header %q does not match params.taskId %q", v, id)}
	}
	return nil
}
