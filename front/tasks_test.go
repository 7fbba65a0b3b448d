package front

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/front/internal/tasks"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskRig is a front over one shared backend, "a", with tools that run
// as tasks, on a mock clock, over Streamable HTTP; callers are named by
// subjectHeader.
type taskRig struct {
	f         *Front
	clk       *clock.Mock
	url       string
	runs      atomic.Int32  // calls of "job" the backend started
	started   chan struct{} // a value per start of "job"
	release   chan struct{} // closed: "job" answers
	cancelled chan struct{} // a value per "job" whose context ended first
	armed     chan struct{} // a value per call whose head start is timed
}

func taskMeta(support string) mcp.Meta {
	return mcp.Meta{taskExtension: map[string]any{"taskSupport": support}}
}

func newTaskRig(t *testing.T) *taskRig {
	t.Helper()
	r := &taskRig{clk: clock.NewMock(), started: make(chan struct{}, 8), release: make(chan struct{}),
		cancelled: make(chan struct{}, 8), armed: make(chan struct{}, 8)}
	reg := conn.NewRegistry()
	bs := newFakeBackends()
	f := New(Options{Registry: reg, Names: NamesRaw, Logger: slog.New(slog.DiscardHandler), Backends: bs, Clock: r.clk})
	f.tasks.armed = func() { r.armed <- struct{}{} }
	srv := conntest.NewServer(conntest.Accept)
	obj := map[string]any{"type": "object"}
	srv.MCP.AddTool(&mcp.Tool{Name: "job", InputSchema: obj, Meta: taskMeta("optional")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.runs.Add(1)
			r.started <- struct{}{}
			select {
			case <-r.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "job done"}}}, nil
			case <-ctx.Done():
				r.cancelled <- struct{}{}
				return nil, ctx.Err()
			}
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "quick", InputSchema: obj, Meta: taskMeta("optional")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick"}}}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "must", InputSchema: obj, Meta: taskMeta("required")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "must"}}}, nil
		})
	srv.MCP.AddTool(&mcp.Tool{Name: "confirm", InputSchema: obj, Meta: taskMeta("optional")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ok, answered := req.Params.InputResponses["ok"].(*mcp.ElicitResult)
			if !answered {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{
					Message: "sure?", RequestedSchema: map[string]any{"type": "object"}}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "confirmed: " + ok.Action}}}, nil
		})
	rec := conntest.NewRecorder()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	cfg := conn.Config{Name: "a", Transport: srv.Transport(), Reconnect: &p, Clock: clock.NewMock(),
		Logger: rec.Logger(), ProtocolVersion: conn.ClassicProtocolVersion, Registry: reg, OnTransition: rec.OnTransition}
	f.Configure("a", &cfg)
	sup, err := conn.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	bs.set("a", sup)
	rec.Expect(t, limit, conn.Established)
	f.Update()
	hs := httptest.NewServer(f.HTTPHandler(HTTPOptions{Subject: testSubject}))
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
		hs.Close()
		_ = f.Close(context.Background())
		_ = sup.Close(context.Background())
		srv.Close()
	})
	r.url, r.f = hs.URL, f
	return r
}

// rpcReply is a JSON-RPC response.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// taskPost sends one 2026-07-28 request of caller to the front, declaring
// the tasks extension if declare, on a connection of its own (closed
// after), and returns the response.
func (r *taskRig) taskPost(t *testing.T, caller, method, name, params string, declare bool) rpcReply {
	t.Helper()
	caps := `{"elicitation":{}}`
	if declare {
		caps = `{"elicitation":{},"extensions":{"` + taskExtension + `":{}}}`
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	req, err := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	req.Header.Set(subjectHeader, caller)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections() // the connection drops after each request
	resp, err := (&http.Client{Transport: tr, Timeout: limit}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	data := string(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(data))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id":1`) {
				data = d
			}
		}
	}
	var out rpcReply
	if err := json.Unmarshal([]byte(data), &out); err != nil {
		t.Fatalf("%s: %v: %q", method, err, raw)
	}
	return out
}

// task is a task's wire shape, as the tests read it.
type task struct {
	ResultType    string          `json:"resultType"`
	TaskID        string          `json:"taskId"`
	Status        string          `json:"status"`
	TTLMs         int64           `json:"ttlMs"`
	Result        json.RawMessage `json:"result"`
	InputRequests map[string]struct {
		Method string `json:"method"`
	} `json:"inputRequests"`
}

func (r rpcReply) task(t *testing.T) task {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
	}
	var out task
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// start calls tool as caller, declaring the extension, past its head
// start, and returns the task it made.
func (r *taskRig) start(t *testing.T, caller, tool string) task {
	t.Helper()
	got := make(chan rpcReply, 1)
	go func() { got <- r.taskPost(t, caller, "tools/call", tool, `"name":"`+tool+`","arguments":{}`, true) }()
	recv(t, r.armed, "the call's head start")
	r.clk.Add(taskHeadStart)
	tk := recv(t, got, "the task").task(t)
	if tk.ResultType != "task" || tk.TaskID == "" {
		t.Fatalf("call %s: %+v; want a task", tool, tk)
	}
	return tk
}

// await waits until caller's task id has status.
func (r *taskRig) await(t *testing.T, caller, id string, status tasks.Status) {
	t.Helper()
	deadline := time.After(limit)
	for {
		changed := r.f.taskStore().Changed()
		if v, ok := r.f.taskStore().Get("subject:"+caller, id); ok && v.Status == status {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("task %s never became %s", id, status)
		}
	}
}

// emptyAck reports whether reply is the acknowledgement of tasks/update
// and tasks/cancel: resultType "complete", nothing of a task.
func emptyAck(reply rpcReply) bool {
	var m map[string]any
	if reply.Error != nil || json.Unmarshal(reply.Result, &m) != nil || m["resultType"] != "complete" {
		return false
	}
	for _, k := range []string{"taskId", "status", "result", "error", "inputRequests"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	return true
}

func (r *taskRig) get(t *testing.T, caller, id string) rpcReply {
	return r.taskPost(t, caller, "tasks/get", id, `"taskId":"`+id+`"`, true)
}

// A task outlives the request (and connection) that made it; its caller
// fetches its result on a new connection, the tool having run once;
// another caller can neither get nor cancel it.
func TestTaskOutlivesItsRequestAndIsItsCallersAlone(t *testing.T) {
	r := newTaskRig(t)
	tk := r.start(t, "alice", "job")
	recv(t, r.started, "the backend's call")
	if tk.Status != "working" || tk.TTLMs != tasks.DefaultTTL.Milliseconds() {
		t.Errorf("task %+v; want working, ttlMs %d", tk, tasks.DefaultTTL.Milliseconds())
	}
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		reply := r.taskPost(t, "bob", method, tk.TaskID, `"taskId":"`+tk.TaskID+`","inputResponses":{}`, true)
		if reply.Error == nil || reply.Error.Code != -32602 {
			t.Errorf("bob's %s of alice's task: %+v; want -32602", method, reply)
		}
	}
	close(r.release)
	r.await(t, "alice", tk.TaskID, tasks.Completed)
	got := r.get(t, "alice", tk.TaskID).task(t)
	if got.Status != "completed" || !strings.Contains(string(got.Result), "job done") {
		t.Fatalf("alice's tasks/get: %+v; want completed with the result", got)
	}
	if n := r.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want once", n)
	}
	if reply := r.get(t, "bob", tk.TaskID); reply.Error == nil {
		t.Errorf("bob got alice's result: %s", reply.Result)
	}
}

// tasks/cancel reaches the backend: its call's context ends, and the
// task is cancelled.
func TestTaskCancelReachesTheBackend(t *testing.T) {
	r := newTaskRig(t)
	tk := r.start(t, "alice", "job")
	recv(t, r.started, "the backend's call")
	reply := r.taskPost(t, "alice", "tasks/cancel", tk.TaskID, `"taskId":"`+tk.TaskID+`"`, true)
	if !emptyAck(reply) {
		t.Fatalf("cancel: %+v %s; want the empty ack", reply.Error, reply.Result)
	}
	recv(t, r.cancelled, "the backend's call cancelled")
	if got := r.get(t, "alice", tk.TaskID).task(t); got.Status != "cancelled" || got.Result != nil {
		t.Errorf("after cancel: %+v; want cancelled", got)
	}
}

// A backend's input request during a task waits in the task
// (input_required, on tasks/get) for tasks/update, and the call goes on.
func TestTaskCarriesTheBackendsInputRequests(t *testing.T) {
	r := newTaskRig(t)
	got := make(chan rpcReply, 1)
	go func() {
		got <- r.taskPost(t, "alice", "tools/call", "confirm", `"name":"confirm","arguments":{}`, true)
	}()
	recv(t, r.armed, "the call's head start")
	tk := recv(t, got, "the task").task(t) // the backend asked first: a task at once
	if tk.ResultType != "task" {
		t.Fatalf("%+v; want a task", tk)
	}
	g := r.get(t, "alice", tk.TaskID).task(t)
	if g.Status != "input_required" || len(g.InputRequests) != 1 {
		t.Fatalf("tasks/get: %+v; want input_required with one request", g)
	}
	var key string
	for k, req := range g.InputRequests {
		key = k
		if req.Method != "elicitation/create" {
			t.Errorf("input request %q: method %q", k, req.Method)
		}
	}
	reply := r.taskPost(t, "alice", "tasks/update", tk.TaskID,
		`"taskId":"`+tk.TaskID+`","inputResponses":{"`+key+`":{"action":"accept","content":{}}}`, true)
	if !emptyAck(reply) {
		t.Fatalf("update: %+v %s; want the empty ack", reply.Error, reply.Result)
	}
	r.await(t, "alice", tk.TaskID, tasks.Completed)
	if g := r.get(t, "alice", tk.TaskID).task(t); !strings.Contains(string(g.Result), "confirmed: accept") {
		t.Errorf("result %s; want the confirmed call's", g.Result)
	}
}

// Without the extension declared, a tool that runs only as a task is
// refused with -32021 naming it, one that may is called as usual, and
// the tasks methods are refused.
func TestTasksNeedTheExtension(t *testing.T) {
	r := newTaskRig(t)
	reply := r.taskPost(t, "alice", "tools/call", "must", `"name":"must","arguments":{}`, false)
	if reply.Error == nil || reply.Error.Code != -32021 || !strings.Contains(string(reply.Error.Data), taskExtension) {
		t.Errorf("required task without the extension: %+v", reply)
	}
	reply = r.taskPost(t, "alice", "tools/call", "quick", `"name":"quick","arguments":{}`, false)
	if reply.Error != nil || !strings.Contains(string(reply.Result), `"quick"`) || strings.Contains(string(reply.Result), "taskId") {
		t.Errorf("optional task without the extension: %+v %s; want the plain result", reply.Error, reply.Result)
	}
	reply = r.taskPost(t, "alice", "tasks/get", "x", `"taskId":"x"`, false)
	if reply.Error == nil || reply.Error.Code != -32021 {
		t.Errorf("tasks/get without the extension: %+v", reply)
	}
}

// A call that ends within its head start is answered as it came; a
// tool not marked for tasks never is one; tasks/get of an unknown task
// is -32602, and a Mcp-Name header that is not the task's -32020.
func TestQuickCallsAndErrors(t *testing.T) {
	r := newTaskRig(t)
	reply := r.taskPost(t, "alice", "tools/call", "quick", `"name":"quick","arguments":{}`, true)
	if reply.Error != nil || strings.Contains(string(reply.Result), "taskId") || !strings.Contains(string(reply.Result), `"quick"`) {
		t.Errorf("quick call: %+v %s; want its result as it came", reply.Error, reply.Result)
	}
	recv(t, r.armed, "the quick call's head start") // it was timed, and ended first
	if reply := r.get(t, "alice", "nope"); reply.Error == nil || reply.Error.Code != -32602 {
		t.Errorf("unknown task: %+v", reply)
	}
	tk := r.start(t, "alice", "job")
	reply = r.taskPost(t, "alice", "tasks/get", "other", `"taskId":"`+tk.TaskID+`"`, true)
	if reply.Error == nil || reply.Error.Code != -32020 {
		t.Errorf("mismatched Mcp-Name: %+v; want -32020", reply)
	}
}
