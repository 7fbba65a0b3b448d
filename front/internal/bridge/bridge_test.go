//lint:file-ignore SA1019 sampling and roots are deprecated upstream (SEP-2577) but still bridged, and tested.

package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
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
	first, err := alice.Round(ctx, "tools/call", "ask", "", nil, Capabilities{}, elicit)
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
		_, err := try.set.Round(ctx, try.method, try.name, r.RequestState, answers(first, "mallory"), Capabilities{}, elicit)
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) || strings.Contains(err.Error(), "r1") || strings.Contains(err.Error(), r.RequestState) {
			t.Errorf("round of %s %q with the state: %v; want a refusal naming nothing of the call", try.method, try.name, err)
		}
	}
	got, err := alice.Round(ctx, "tools/call", "ask", r.RequestState, answers(first, "alice"), Capabilities{}, elicit)
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
	first, err := roundOn(t, clk, s, func() bool { return sentOf(s) == 1 }, func() (mcp.Result, error) {
		return s.Round(ctx, "tools/call", "ask", "", nil, Capabilities{}, elicit)
	})
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
	if _, err := s.Round(ctx, "tools/call", "ask", first.(*mcp.CallToolResult).RequestState, answers(first, "late"), Capabilities{}, elicit); err == nil {
		t.Error("a late answer reached a lost call")
	}
}

// sentOf counts the requests the backend handed to the rounds of s's
// calls.
func sentOf(s *Set) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.by {
		n += int(c.sent.Load())
	}
	return n
}

// roundOn runs round (a round trip of s, whose clock is clk) once ready
// holds (the backend's requests of the round are all made): it moves
// clk on by the set's gather until the round answers.
func roundOn(t *testing.T, clk *clock.Mock, s *Set, ready func() bool, round func() (mcp.Result, error)) (mcp.Result, error) {
	t.Helper()
	type out struct {
		res mcp.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := round()
		done <- out{res, err}
	}()
	deadline := time.Now().Add(limit)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the backend's requests were not made within %v", limit)
		}
		runtime.Gosched()
	}
	for {
		select {
		case o := <-done:
			return o.res, o.err
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the round did not answer within %v", limit)
		}
		clk.Add(s.o.Gather)
		runtime.Gosched()
	}
}

// A backend that asks for three inputs at once (three concurrent
// requests) gets all three to the client in one round, and the three
// answers back, each to the request it answers.
func TestConcurrentRequestsShareOneRound(t *testing.T) {
	clk := clock.NewMock()
	s := NewSet(Options{Clock: clk})
	defer s.Wait()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	three := func(ctx context.Context) (mcp.Result, error) {
		var wg sync.WaitGroup
		got := make([]string, 3)
		errs := make([]error, 3)
		for i, q := range []string{"name?", "colour?", "city?"} {
			wg.Go(func() {
				r, err := Of(ctx).Ask(ctx, "srv", &mcp.ElicitParams{Message: q})
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = q + r.(*mcp.ElicitResult).Content["a"].(string)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(got, ",")}}}, nil
	}
	first, err := roundOn(t, clk, s, func() bool { return sentOf(s) == 3 }, func() (mcp.Result, error) {
		return s.Round(ctx, "tools/call", "three", "", nil, Capabilities{}, three)
	})
	if err != nil {
		t.Fatal(err)
	}
	r := first.(*mcp.CallToolResult)
	if len(r.InputRequests) != 3 {
		t.Fatalf("the first round carried %d input requests, want the 3 the backend made at once: %+v", len(r.InputRequests), r.InputRequests)
	}
	answers := mcp.InputResponseMap{}
	for id, req := range r.InputRequests {
		q := req.(*mcp.ElicitParams).Message
		answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"a": strings.TrimSuffix(q, "?")}}
	}
	got, err := s.Round(ctx, "tools/call", "three", r.RequestState, answers, Capabilities{}, three)
	if err != nil {
		t.Fatal(err)
	}
	if text := got.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text; text != "name?name,colour?colour,city?city" {
		t.Errorf("the backend got %q, want each answer at its own request", text)
	}
}

// Each round of a call has a requestState of its own: the second
// round's differs from the first's, and the first's names nothing once
// the second is out.
func TestEachRoundHasANewRequestState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	s := NewSet(Options{})
	defer s.Wait()
	defer s.Close()
	twice := func(ctx context.Context) (mcp.Result, error) {
		var names []string
		for _, q := range []string{"first?", "second?"} {
			r, err := Of(ctx).Ask(ctx, "srv", &mcp.ElicitParams{Message: q})
			if err != nil {
				return nil, err
			}
			names = append(names, r.(*mcp.ElicitResult).Content["name"].(string))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(names, ",")}}}, nil
	}
	r1, err := s.Round(ctx, "tools/call", "twice", "", nil, Capabilities{}, twice)
	if err != nil {
		t.Fatal(err)
	}
	state1 := r1.(*mcp.CallToolResult).RequestState
	r2, err := s.Round(ctx, "tools/call", "twice", state1, answers(r1, "a"), Capabilities{}, twice)
	if err != nil {
		t.Fatal(err)
	}
	state2 := r2.(*mcp.CallToolResult).RequestState
	if !r2.(*mcp.CallToolResult).NeedsInput() || state2 == state1 || !Ours(state2) {
		t.Fatalf("round two: %+v; want input_required under a requestState other than round one's %q", r2, state1)
	}
	if _, err := s.Round(ctx, "tools/call", "twice", state1, answers(r2, "replayed"), Capabilities{}, twice); err == nil {
		t.Fatal("round one's requestState was taken after round two was out")
	}
	got, err := s.Round(ctx, "tools/call", "twice", state2, answers(r2, "b"), Capabilities{}, twice)
	if err != nil {
		t.Fatal(err)
	}
	if text := got.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text; text != "a,b" {
		t.Errorf("the backend got %q, want a,b", text)
	}
}

// A client that declared only sampling never gets an elicitation: the
// call ends with MissingRequiredClientCapabilities (-32021) naming
// elicitation, the backend's request fails, and the call is gone. A
// sampling request of the same backend reaches that client.
func TestUndeclaredCapabilityEndsTheCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	s := NewSet(Options{})
	defer s.Wait()
	defer s.Close()
	samplingOnly := CapabilitiesOf(map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"sampling": map[string]any{}}})
	backendErr := make(chan error, 1)
	asks := func(ctx context.Context) (mcp.Result, error) {
		_, err := Of(ctx).Ask(ctx, "srv", &mcp.ElicitParams{Message: "name?"})
		backendErr <- err
		return nil, err
	}
	_, err := s.Round(ctx, "tools/call", "ask", "", nil, samplingOnly, asks)
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Fatalf("a sampling-only client's call of an eliciting tool: %v; want code %d", err, mcp.CodeMissingRequiredClientCapabilities)
	}
	var data struct {
		RequiredCapabilities map[string]any `json:"requiredCapabilities"`
	}
	if json.Unmarshal(wire.Data, &data) != nil || data.RequiredCapabilities["elicitation"] == nil {
		t.Errorf("the error's data %s does not name elicitation as required", wire.Data)
	}
	select {
	case err := <-backendErr:
		if err == nil {
			t.Error("the backend's elicitation was answered")
		}
	case <-time.After(limit):
		t.Fatal("the backend's elicitation was never answered")
	}
	eventuallyEmpty(t, s)
	sample := func(ctx context.Context) (mcp.Result, error) {
		if _, err := Of(ctx).Ask(ctx, "srv", &mcp.CreateMessageParams{MaxTokens: 1}); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{}, nil
	}
	res, err := s.Round(ctx, "tools/call", "sample", "", nil, samplingOnly, sample)
	if err != nil || !res.(*mcp.CallToolResult).NeedsInput() {
		t.Fatalf("a sampling request to a client that declared sampling: %+v, %v; want input_required", res, err)
	}
}

// eventuallyEmpty waits until s holds no call.
func eventuallyEmpty(t *testing.T, s *Set) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for s.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls left", s.Len())
		}
		runtime.Gosched()
	}
}

// Capabilities cover what they declare; without the key, everything.
func TestCapabilitiesCover(t *testing.T) {
	for _, tc := range []struct {
		declared any
		req      mcp.InputRequest
		want     bool
	}{
		{nil, &mcp.ElicitParams{}, true},
		{map[string]any{}, &mcp.ElicitParams{}, false},
		{map[string]any{"elicitation": map[string]any{}}, &mcp.ElicitParams{}, true},
		{map[string]any{"elicitation": map[string]any{}}, &mcp.ElicitParams{Mode: "url"}, false},
		{map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, &mcp.ElicitParams{Mode: "url"}, true},
		{map[string]any{"sampling": map[string]any{}}, &mcp.ListRootsParams{}, false},
		{map[string]any{"roots": map[string]any{}}, &mcp.ListRootsParams{}, true},
		{&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, &mcp.CreateMessageParams{}, true},
	} {
		meta := map[string]any{}
		if tc.declared != nil {
			meta[mcp.MetaKeyClientCapabilities] = tc.declared
		}
		err := CapabilitiesOf(meta).check([]*ask{{req: tc.req}})
		if (err == nil) != tc.want {
			t.Errorf("declared %v, request %T %+v: %v; want covered %v", tc.declared, tc.req, tc.req, err, tc.want)
		}
	}
}

// Drop ends a call whose round is out to its client: the backend's call
// is cancelled, and the round's state names nothing any more.
func TestDropCancelsTheCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	s := NewSet(Options{})
	defer s.Wait()
	defer s.Close()
	ended := make(chan error, 1)
	first, err := s.Round(ctx, "tools/call", "ask", "", nil, Capabilities{}, func(ctx context.Context) (mcp.Result, error) {
		res, err := elicit(ctx)
		ended <- err
		return res, err
	})
	if err != nil {
		t.Fatal(err)
	}
	state := first.(*mcp.CallToolResult).RequestState
	s.Drop("mcpfsm-unknown") // names nothing: no effect
	if s.Len() != 1 {
		t.Fatalf("Drop of an unknown state removed a call")
	}
	s.Drop(state)
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the backend's call ended without an error")
		}
	case <-time.After(limit):
		t.Fatal("the backend's call did not end")
	}
	if _, err := s.Round(ctx, "tools/call", "ask", state, answers(first, "x"), Capabilities{}, elicit); err == nil {
		t.Error("the dropped call's state still names it")
	}
}
