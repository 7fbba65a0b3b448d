package e2e_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

var (
	tasksOnce sync.Once
	tasksBin  string
	tasksErr  error
	tasksOut  []byte
)

// tasksServer builds internal/fixture/tasksserver once.
func tasksServer(t *testing.T) string {
	t.Helper()
	host := fixture.BuildHost(t)
	tasksOnce.Do(func() {
		tasksBin = filepath.Join(filepath.Dir(host), "tasksserver")
		cmd := exec.Command("go", "build", "-o", tasksBin, "github.com/mcpfsm/mcpfsm/internal/fixture/tasksserver")
		tasksOut, tasksErr = cmd.CombinedOutput()
	})
	if tasksErr != nil {
		t.Fatalf("build tasksserver: %v\n%s", tasksErr, tasksOut)
	}
	return tasksBin
}

// taskReply is a JSON-RPC response of serve to a tasks request.
type taskReply struct {
	Result struct {
		ResultType string          `json:"resultType"`
		TaskID     string          `json:"taskId"`
		Status     string          `json:"status"`
		Result     json.RawMessage `json:"result"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// postTask sends one 2026-07-28 request that declares the tasks
// extension to serve at url with token, on a connection of its own that
// is closed once the answer is read, and returns the answer.
func postTask(t *testing.T, url, token, method, name, params string) taskReply {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	req.Header.Set("Authorization", "Bearer "+token)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: wait}).Do(req)
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
	var out taskReply
	if err := json.Unmarshal([]byte(data), &out); err != nil {
		t.Fatalf("%s: %v: %q", method, err, raw)
	}
	return out
}

// A tool call serve runs as a task outlives the request and the
// connection that started it: its caller, on a new connection, fetches
// the result, the tool having run once on the backend; another caller
// can neither fetch nor cancel it.
func TestTaskOutlivesItsConnection(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	is := serveIsolated(t, []string{tasksServer(t), "-runs", runs}, nil)
	is.awaitShared(t)
	alice := is.issuer.Token(t, isolatedResource, "alice", "mcp")
	bob := is.issuer.Token(t, isolatedResource, "bob", "mcp")

	started := postTask(t, is.url, alice, "tools/call", "slow_compute", `"name":"slow_compute","arguments":{"seconds":2,"label":"e2e"}`)
	if started.Error != nil || started.Result.ResultType != "task" || started.Result.TaskID == "" {
		t.Fatalf("tools/call: %+v; want a task", started)
	}
	id := started.Result.TaskID
	// The connection that started it is closed; the task runs on.
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		if r := postTask(t, is.url, bob, method, id, `"taskId":"`+id+`"`); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("bob's %s of alice's task: %+v; want -32602", method, r)
		}
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var got taskReply
	for {
		got = postTask(t, is.url, alice, "tasks/get", id, `"taskId":"`+id+`"`)
		if got.Error != nil {
			t.Fatalf("alice's tasks/get: %+v", got.Error)
		}
		if got.Result.Status != "working" || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	if got.Result.Status != "completed" || !strings.Contains(string(got.Result.Result), `computed \"e2e\"`) {
		t.Fatalf("alice's task: %+v %s; want completed with its result", got.Result, got.Result.Result)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "slow_compute\n"); n != 1 {
		t.Errorf("slow_compute ran %d times on the backend; want once", n)
	}
}
