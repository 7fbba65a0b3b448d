package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const limit = 10 * time.Second

func TestSpecCompiles(t *testing.T) {
	if err := Spec().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := machines().New(machineOptions()); err != nil {
		t.Fatal(err)
	}
}

// elicit is a backend call that asks its client for a name and answers
// with it.
func elicit(ctx context.Context) (mcp.Result, error) {
	r, err := Of(ctx).Ask(ctx, "srv", &mcp.ElicitParams{Message: "name?"})
	if err != nil {
		return nil, err
	}
	name := r.(*mcp.ElicitResult).Content["name"]
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name.(string)}}}, nil
}

func answers(res mcp.Result, name string) mcp.InputResponseMap {
	m := mcp.InputResponseMap{}
	for id := range res.(*mcp.CallToolResult).InputRequests {
		m[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}
	}
	return m
}

// A call round-trips: input_required with a fresh requestState, then the
// answer to the backend and its result to the client. Another set (a
// client of its own) cannot name the call, nor can a round trip of
// another method or name, and the refusal names nothing of the call.
func TestRoundTripsAndStatesAreTheSetsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	alice, mallory := NewSet(Options{}), NewSet(Options{})
	defer alice.Wait()
	defer mallory.Close()
	defer alice.Close()
	first, err := alice.Round(ctx, "tools/call", "ask", "", nil, elicit)
	if err != nil {
		t.Fatal(err)
	}
	r := first.(*mcp.CallToolResult)
	if !r.NeedsInput() || len(r.RequestState) != len("mcpfsm-")+32 || len(r.InputRequests) != 1 {
		t.Fatalf("first round: %+v", r)
	}
	for _, try := range []struct {
		set          *Set
		method, name string
	}{{mallory, "tools/call", "ask"}, {alice, "tools/call", "other"}, {alice, "prompts/get", "ask"}} {
		_, err := try.set.Round(ctx, try.method, try.name, r.RequestState, answers(first, "mallory"), elicit)
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) || strings.Contains(err.Error(), "r1") || strings.Contains(err.Error(), r.RequestState) {
			t.Errorf("round of %s %q with the state: %v; want a refusal naming nothing of the call", try.method, try.name, err)
		}
	}
	got, err := alice.Round(ctx, "tools/call", "ask", r.RequestState, answers(first, "alice"), elicit)
	if err != nil || got.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text != "alice" {
		t.Fatalf("alice's answer: %+v, %v", got, err)
	}
	if n := alice.Len(); n != 0 {
		t.Errorf("%d calls left after the call completed", n)
	}
}

// A round the client abandons is lost after the wait: the backend's call
// is cancelled, Gone hears of it, and the state names nothing any more.
func TestAbandonedRoundIsLost(t *testing.T) {
	clk := clock.NewMock()
	gone := make(chan *Call, 1)
	s := NewSet(Options{Clock: clk, Wait: func(string) time.Duration { return 30 * time.Second }, Gone: func(c *Call) { gone <- c }})
	defer s.Wait()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	first, err := s.Round(ctx, "tools/call", "ask", "", nil, elicit)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(29 * time.Second)
	if s.Len() != 1 {
		t.Fatal("the call was lost before its wait")
	}
	clk.Add(time.Second)
	select {
	case <-gone:
	case <-time.After(limit):
		t.Fatal("the abandoned round was not lost after its wait")
	}
	if _, err := s.Round(ctx, "tools/call", "ask", first.(*mcp.CallToolResult).RequestState, answers(first, "late"), elicit); err == nil {
		t.Error("a late answer reached a lost call")
	}
}
