package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// call is a task's call: cancelled reports whether the store ended it.
type call struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newCall() call {
	ctx, cancel := context.WithCancel(context.Background())
	return call{ctx, cancel}
}

func (c call) cancelled() bool { return c.ctx.Err() != nil }

func TestAnotherOwnerCannotSeeAnswerOrCancel(t *testing.T) {
	s := New(Options{Clock: clock.NewMock()})
	defer s.Close()
	c := newCall()
	v, err := s.Create("alice", c.cancel)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("bob", v.ID); ok {
		t.Error("bob got alice's task")
	}
	if s.Answer("bob", v.ID, mcp.InputResponseMap{}) {
		t.Error("bob answered alice's task")
	}
	if s.Cancel("bob", v.ID) {
		t.Error("bob cancelled alice's task")
	}
	if c.cancelled() {
		t.Error("bob's cancel reached alice's call")
	}
	got, ok := s.Get("alice", v.ID)
	if !ok || got.Status != Working {
		t.Fatalf("alice's task: %+v, %v; want working", got, ok)
	}
}

func TestCompletedTaskKeepsItsResultUntilItsTTL(t *testing.T) {
	clk := clock.NewMock()
	s := New(Options{Clock: clk, TTL: time.Minute})
	defer s.Close()
	c := newCall()
	v, _ := s.Create("alice", c.cancel)
	clk.Add(10 * time.Second)
	s.Finish(v.ID, text("done"), nil)
	got, ok := s.Get("alice", v.ID)
	if !ok || got.Status != Completed || !strings.Contains(string(got.Result), `"done"`) {
		t.Fatalf("got %+v, %v; want completed with its result", got, ok)
	}
	if !got.Updated.Equal(v.Created.Add(10 * time.Second)) {
		t.Errorf("lastUpdated %v; want the finish time", got.Updated)
	}
	clk.Add(49 * time.Second) // 59s old: still kept
	if _, ok := s.Get("alice", v.ID); !ok {
		t.Fatal("the task was gone before its TTL")
	}
	clk.Add(time.Second)
	if _, ok := s.Get("alice", v.ID); ok {
		t.Fatal("the task outlived its TTL")
	}
	if n, bytes := s.Len(); n != 0 || bytes != 0 {
		t.Errorf("after expiry the store keeps %d tasks, %d bytes", n, bytes)
	}
}

func TestExpiryCancelsARunningCall(t *testing.T) {
	clk := clock.NewMock()
	s := New(Options{Clock: clk, TTL: time.Minute})
	defer s.Close()
	c := newCall()
	v, _ := s.Create("alice", c.cancel)
	clk.Add(time.Minute)
	if !c.cancelled() {
		t.Error("a call still running at its task's expiry was not cancelled")
	}
	s.Finish(v.ID, text("late"), nil) // the runner reports after: nothing is kept
	if n, _ := s.Len(); n != 0 {
		t.Errorf("store keeps %d tasks", n)
	}
}

func TestCancelReachesTheCallAndIsIdempotent(t *testing.T) {
	s := New(Options{Clock: clock.NewMock()})
	defer s.Close()
	c := newCall()
	v, _ := s.Create("alice", c.cancel)
	if !s.Cancel("alice", v.ID) || !c.cancelled() {
		t.Fatal("cancel did not reach the call")
	}
	s.Finish(v.ID, nil, context.Canceled) // the call ends as cancelled
	got, _ := s.Get("alice", v.ID)
	if got.Status != Cancelled || got.Error != nil {
		t.Fatalf("got %+v; want cancelled, no error", got)
	}
	if !s.Cancel("alice", v.ID) {
		t.Error("cancelling a terminal task did not acknowledge")
	}
	if got, _ := s.Get("alice", v.ID); got.Status != Cancelled {
		t.Errorf("status %s after a second cancel", got.Status)
	}
	d := newCall()
	w, _ := s.Create("alice", d.cancel)
	s.Finish(w.ID, text("ok"), nil)
	s.Cancel("alice", w.ID)
	if got, _ := s.Get("alice", w.ID); got.Status != Completed {
		t.Errorf("cancel changed a completed task to %s", got.Status)
	}
}

func TestCountBounds(t *testing.T) {
	s := New(Options{Clock: clock.NewMock(), MaxTasks: 3, MaxPerOwner: 2})
	defer s.Close()
	for range 2 {
		if _, err := s.Create("alice", func() {}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create("alice", func() {}); !errors.Is(err, ErrFull) {
		t.Errorf("alice's third task: %v; want ErrFull", err)
	}
	if _, err := s.Create("bob", func() {}); err != nil {
		t.Fatalf("bob's first: %v", err)
	}
	if _, err := s.Create("carol", func() {}); !errors.Is(err, ErrFull) {
		t.Errorf("a fourth task in all: %v; want ErrFull", err)
	}
}

func TestByteBoundsFailTheTask(t *testing.T) {
	s := New(Options{Clock: clock.NewMock(), MaxResultBytes: 100, MaxBytes: 150})
	defer s.Close()
	big, _ := s.Create("alice", func() {})
	s.Finish(big.ID, text(strings.Repeat("x", 200)), nil)
	got, _ := s.Get("alice", big.ID)
	if got.Status != Failed || got.Error == nil || !strings.Contains(got.Error.Message, "more than the 100 a task keeps") {
		t.Fatalf("a result past MaxResultBytes: %+v; want failed, naming the bound", got)
	}
	a, _ := s.Create("alice", func() {})
	s.Finish(a.ID, text(strings.Repeat("a", 60)), nil)
	b, _ := s.Create("alice", func() {})
	s.Finish(b.ID, text(strings.Repeat("b", 60)), nil)
	if got, _ := s.Get("alice", b.ID); got.Status != Failed || !strings.Contains(got.Error.Message, "room") {
		t.Fatalf("a result past MaxBytes in all: %+v; want failed", got)
	}
	if _, bytes := s.Len(); bytes > 150 {
		t.Errorf("store keeps %d bytes, bound 150", bytes)
	}
}

func TestProtocolErrorIsKeptAsItCame(t *testing.T) {
	s := New(Options{Clock: clock.NewMock()})
	defer s.Close()
	v, _ := s.Create("alice", func() {})
	s.Finish(v.ID, nil, &jsonrpc.Error{Code: -32001, Message: "boom"})
	got, _ := s.Get("alice", v.ID)
	if got.Status != Failed || got.Result != nil {
		t.Fatalf("got %+v", got)
	}
	if diff := cmp.Diff(&jsonrpc.Error{Code: -32001, Message: "boom"}, got.Error); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestPartialAnswersWaitForTheRest(t *testing.T) {
	s := New(Options{Clock: clock.NewMock()})
	defer s.Close()
	v, _ := s.Create("alice", func() {})
	reqs := mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "a?"}, "b": &mcp.ElicitParams{Message: "b?"}}
	ready := s.Ask(v.ID, reqs, "state-1")
	if !s.Answer("alice", v.ID, mcp.InputResponseMap{"a": &mcp.ElicitResult{Action: "accept"}, "zzz": &mcp.ElicitResult{}}) {
		t.Fatal("partial answer not acknowledged")
	}
	select {
	case <-ready:
		t.Fatal("the call got its answers with one missing")
	default:
	}
	got, _ := s.Get("alice", v.ID)
	if got.Status != InputRequired || len(got.InputRequests) != 1 || got.InputRequests["b"] == nil {
		t.Fatalf("after a partial answer: %+v; want input_required with b alone", got)
	}
	s.Answer("alice", v.ID, mcp.InputResponseMap{"b": &mcp.ElicitResult{Action: "decline"}})
	select {
	case answers := <-ready:
		if len(answers) != 2 || answers["zzz"] != nil {
			t.Errorf("answers %v; want a and b", answers)
		}
	default:
		t.Fatal("the call did not get its answers")
	}
	if got, _ := s.Get("alice", v.ID); got.Status != Working || got.InputRequests != nil {
		t.Errorf("after every answer: %+v; want working", got)
	}
	if s.State(v.ID) != "state-1" {
		t.Errorf("state %q", s.State(v.ID))
	}
}

func TestForgetAndCloseCancelRunningCalls(t *testing.T) {
	s := New(Options{Clock: clock.NewMock()})
	a, b := newCall(), newCall()
	s.Create("alice", a.cancel)
	s.Create("bob", b.cancel)
	s.Forget("alice")
	if !a.cancelled() || b.cancelled() {
		t.Fatalf("Forget(alice): alice cancelled %v, bob cancelled %v", a.cancelled(), b.cancelled())
	}
	s.Close()
	if !b.cancelled() {
		t.Error("Close left bob's call running")
	}
	if _, err := s.Create("bob", func() {}); !errors.Is(err, ErrFull) {
		t.Errorf("Create after Close: %v", err)
	}
}
