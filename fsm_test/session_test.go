//lint:file-ignore SA1019 sampling and logging are deprecated upstream (SEP-2577) but still served, and tested.

package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// classic pins the classic protocol: server-to-client requests while a
// call is served (elicitation, sampling, roots) and the resources/subscribe
// RPC are features of the classic, stateful protocol.
func classic() option {
	return func(_ *harness, c *conn.Config) { c.ProtocolVersion = conn.ClassicProtocolVersion }
}

// withClient sets Config.Client.
func withClient(o *mcp.ClientOptions) option {
	return func(_ *harness, c *conn.Config) { c.Client = o }
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("result %+v: want one content", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content %T: want text", res.Content[0])
	}
	return tc.Text
}

// recover crashes the server and waits until the next generation is
// established.
func (h *harness) recoverFromCrash() {
	h.t.Helper()
	h.crash()
	tr := h.expect(conn.LostReconnecting)[0]
	h.advance(tr.Delay)
	h.expect(conn.Connecting, conn.Established)
}

// Every handler of Config.Client is called as the SDK would call it, by
// the first generation and again after a crash and recovery; the
// supervisor's own tool-list handling runs alongside the user's.
func TestClientHandlersAcrossRecovery(t *testing.T) {
	events := make(chan string, 100)
	srv := conntest.NewServer(accept)
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprint(res.Action, " ", res.Content["name"])), nil, nil
	})
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text(res.Content.(*mcp.TextContent).Text), nil, nil
	})
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "log line"}); err != nil {
			return nil, nil, err
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "half"}); err != nil {
				return nil, nil, err
			}
		}
		return text("done"), nil, nil
	})
	gen := 0 // the generation the handlers answer for; set by the test goroutine between calls
	var mu sync.Mutex
	current := func() int { mu.Lock(); defer mu.Unlock(); return gen }
	h := newHarnessOn(t, srv, nil, classic(), withPolicy(small), withClient(&mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": fmt.Sprintf("gen%d", current())}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: fmt.Sprintf("sampled gen%d", current())}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			events <- fmt.Sprintf("log %v", req.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			events <- "progress " + req.Params.Message
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { events <- "tools changed" },
	}))
	h.expect(conn.Established)
	ctx := context.Background()
	for g := 1; g <= 2; g++ {
		mu.Lock()
		gen = g
		mu.Unlock()
		if g == 2 {
			h.recoverFromCrash()
		}
		res, err := h.reg.Call(ctx, "mcp__fx__ask", nil)
		if err != nil {
			t.Fatalf("gen %d: ask: %v", g, err)
		}
		if got, want := resultText(t, res), fmt.Sprintf("accept gen%d", g); got != want {
			t.Errorf("gen %d: elicitation answer %q, want %q", g, got, want)
		}
		if res, err = h.reg.Call(ctx, "mcp__fx__sample", nil); err != nil {
			t.Fatalf("gen %d: sample: %v", g, err)
		}
		if got, want := resultText(t, res), fmt.Sprintf("sampled gen%d", g); got != want {
			t.Errorf("gen %d: sampling answer %q, want %q", g, got, want)
		}
		// Logging needs a level, and progress a token: both go through
		// WithSession, the escape hatch to the session.
		err = h.sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				return err
			}
			params := &mcp.CallToolParams{Name: "chatty"}
			params.SetProgressToken("tok")
			_, err := cs.CallTool(ctx, params)
			return err
		})
		if err != nil {
			t.Fatalf("gen %d: chatty: %v", g, err)
		}
		tool := fmt.Sprintf("added%d", g)
		h.addTool(tool)
		h.waitRegistered("mcp__fx__" + tool) // the supervisor's own handling
		var got []string
		for range 3 {
			got = append(got, waitFor(t, events, "a handler call"))
		}
		if diff := cmp.Diff([]string{"log log line", "progress half", "tools changed"}, got); diff != "" {
			t.Errorf("gen %d: handler calls, in order (-want +got):\n%s", g, diff)
		}
	}
}

// A user handler that blocks, notification or request, neither stalls
// the supervisor's own handling nor keeps it from noticing that the
// server died; Close cancels the blocked handlers' contexts.
func TestBlockingHandlersDoNotStallTheSupervisor(t *testing.T) {
	release := make(chan struct{})
	logEntered := make(chan struct{}, 10)
	elicitEntered := make(chan struct{}, 10)
	srv := conntest.NewServer(accept)
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{"type": "object"}})
		return text("asked"), nil, err
	})
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return text("done"), nil, req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "x"})
	})
	h := newHarnessOn(t, srv, nil, classic(), withPolicy(small), withClient(&mcp.ClientOptions{
		// Both ignore their context until the test releases them.
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {
			logEntered <- struct{}{}
			<-release
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicitEntered <- struct{}{}
			<-release
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}))
	defer close(release)
	h.expect(conn.Established)
	ctx := context.Background()
	err := h.sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			return err
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty"})
		return err
	})
	if err != nil {
		t.Fatalf("chatty: %v", err)
	}
	waitFor(t, logEntered, "the log handler to block")
	// The blocked notification handler does not hold list_changed.
	h.addTool("later")
	h.waitRegistered("mcp__fx__later")
	// A blocked request handler: the server dies under it.
	callErr := make(chan error, 1)
	go func() {
		_, err := h.reg.Call(ctx, "mcp__fx__ask", nil)
		callErr <- err
	}()
	waitFor(t, elicitEntered, "the elicitation handler to block")
	h.crash()
	h.expect(conn.LostReconnecting)
	if err := waitFor(t, callErr, "the call to end"); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("call under a blocked handler: err = %v, want ErrUnavailable", err)
	}
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
}

// A handler that never returns holds Close at most CloseTimeout, which
// reports the incomplete shutdown.
func TestCloseWaitsForHandlersAtMostCloseTimeout(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	srv := conntest.NewServer(accept)
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return text("done"), nil, req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "x"})
	})
	h := newHarnessOn(t, srv, nil, classic(), withClient(&mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {
			entered <- struct{}{}
			<-release // ignores its cancelled context
		},
	}))
	h.expect(conn.Established)
	ctx := context.Background()
	if err := h.sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			return err
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty"})
		return err
	}); err != nil {
		t.Fatalf("chatty: %v", err)
	}
	waitFor(t, entered, "the log handler to block")
	closed := make(chan error, 1)
	go func() { closed <- h.sup.Close(ctx) }()
	h.expect(conn.Disposing)
	h.advance(conn.DefaultCloseTimeout)
	if err := waitFor(t, closed, "Close to return"); !errors.Is(err, conn.ErrIncompleteShutdown) {
		t.Errorf("Close = %v, want ErrIncompleteShutdown", err)
	}
}

// Client options the supervisor owns are refused by Start, naming the field.
func TestStartRejectsClientOptionsTheSupervisorOwns(t *testing.T) {
	srv := conntest.NewServer(accept)
	defer srv.Close()
	tests := []struct {
		opts  mcp.ClientOptions
		field string
	}{
		{mcp.ClientOptions{KeepAlive: time.Second}, "Client.KeepAlive"},
		{mcp.ClientOptions{KeepAliveFailureThreshold: 3}, "Client.KeepAlive"},
		{mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, nil
			},
			CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
				return nil, nil
			},
		}, "Client.CreateMessageHandler"},
	}
	for _, tc := range tests {
		_, err := conn.Start(context.Background(), conn.Config{Name: "fx", Transport: srv.Transport(), Registry: conn.NewRegistry(), Client: &tc.opts})
		var ce *conn.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Start with %s set: err = %v, want a *ConfigError for %s", tc.field, err, tc.field)
		}
	}
}

// WithSession fails fast without an established generation, and a
// generation lost under f makes its error match ErrUnavailable.
func TestWithSessionOutagesAndLostGenerations(t *testing.T) {
	entered := make(chan struct{}, 10)
	srv := conntest.NewServer(accept)
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	h := newHarnessOn(t, srv, nil, withPolicy(small))
	ctx := context.Background()
	called := 0
	f := func(ctx context.Context, cs *mcp.ClientSession) error {
		called++
		return cs.Ping(ctx, nil)
	}
	h.expect(conn.Established)
	if err := h.sup.WithSession(ctx, f); err != nil || called != 1 {
		t.Fatalf("established: err = %v, called %d, want nil and 1", err, called)
	}
	// Lost mid-call.
	done := make(chan error, 1)
	go func() {
		done <- h.sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
			return err
		})
	}()
	waitFor(t, entered, "the blocking call to reach the server")
	h.crash()
	h.expect(conn.LostReconnecting)
	if err := waitFor(t, done, "WithSession to return"); !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("lost mid-call: err = %v, want ErrUnavailable", err)
	}
	// During the outage: fast, and f is not called.
	if err := h.sup.WithSession(ctx, f); !errors.Is(err, conn.ErrUnavailable) || called != 1 {
		t.Errorf("outage: err = %v, called %d, want ErrUnavailable and still 1", err, called)
	}
	h.advance(time.Second)
	h.expect(conn.Connecting, conn.Established)
	if err := h.sup.WithSession(ctx, f); err != nil || called != 2 {
		t.Errorf("recovered: err = %v, called %d, want nil and 2", err, called)
	}
	// CallTimeout bounds it like a tool call.
	go func() {
		done <- h.sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
			return err
		})
	}()
	waitFor(t, entered, "the blocking call to reach the server")
	h.advance(conn.DefaultCallTimeout)
	if err := waitFor(t, done, "WithSession to time out"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "CallTimeout") {
		t.Errorf("past CallTimeout: err = %v, want DeadlineExceeded naming CallTimeout", err)
	}
}

// Before the first generation is up, WithSession fails fast too.
func TestWithSessionFailsFastWhileConnecting(t *testing.T) {
	h := newHarness(t, []behaviour{refuse}, nil, withPolicy(small))
	h.expect(conn.FailedRetrying)
	err := h.sup.WithSession(context.Background(), func(context.Context, *mcp.ClientSession) error {
		t.Error("f called without a session")
		return nil
	})
	if !errors.Is(err, conn.ErrUnavailable) || !strings.Contains(err.Error(), string(conn.FailedRetrying)) {
		t.Errorf("err = %v, want ErrUnavailable naming the state", err)
	}
}

// A server that floods notifications while a handler blocks cannot grow
// the host's memory: beyond 1024 waiting, notifications are dropped, and
// the count is logged once the handler catches up.
func TestNotificationFloodIsBounded(t *testing.T) {
	const flood = 1500
	entered := make(chan struct{}, 1)
	last := make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	handled := 0
	srv := conntest.NewServer(accept)
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "flood"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := range flood {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: i}); err != nil {
				return nil, nil, err
			}
		}
		return text("flooded"), nil, nil
	})
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "last"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return text("done"), nil, req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "last"})
	})
	h := newHarnessOn(t, srv, nil, classic(), withClient(&mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Data == "last" {
				last <- struct{}{}
				return
			}
			select {
			case entered <- struct{}{}:
				<-release // the first call blocks until the flood is over
			default:
			}
			mu.Lock()
			handled++
			mu.Unlock()
		},
	}))
	h.expect(conn.Established)
	ctx := context.Background()
	call := func(name string) {
		t.Helper()
		if err := h.sup.WithSession(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				return err
			}
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
			return err
		}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	call("flood")
	waitFor(t, entered, "the first log call")
	close(release)
	// The SDK hands notifications to the handlers in order, so "last" is
	// offered after every notification of the flood, and its queueing
	// logs the drops before it.
	call("last")
	waitFor(t, last, "the last notification handled")
	// Every notification of the flood was handled or counted as dropped
	// (the SDK delivers them in order, so all were offered before "last").
	dropped := 0
	for _, l := range h.rec.Logs(slog.LevelWarn) {
		var n int
		if _, err := fmt.Sscanf(l.Msg, "%d server notifications were dropped: a Config.Client notification handler is too slow", &n); err == nil {
			dropped += n
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if dropped == 0 || dropped+handled != flood {
		t.Errorf("%d handled and %d logged as dropped, want some dropped and %d in all", handled, dropped, flood)
	}
}
