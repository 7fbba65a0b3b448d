//lint:file-ignore SA1019 sampling and roots are deprecated upstream (SEP-2577) but still served; a host with every handler answers them.

// Command conformance-host is the MCP conformance suite's client under test, built
// only on package conn's public API: conn.Start, conn.HTTP and
// Config.Client. It behaves as a plain host with every handler would: it
// connects, lists the server's tools and calls each of them with
// arguments built from its input schema (or, when the scenario's context
// lists toolCalls, makes those calls), accepts every elicitation with the
// requested schema's defaults, answers sampling with a fixed message,
// offers one root, and authorizes with the go-sdk's OAuth handlers. A
// failed call is logged and the next one made, as go-sdk's conformance
// client does. The suite runs it as "host URL", with the scenario in
// MCP_CONFORMANCE_SCENARIO and its parameters (JSON) in
// MCP_CONFORMANCE_CONTEXT; see .ci/conformance-run.sh.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: host SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, scenario, rawContext string) error {
	params := map[string]any{}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &params); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: not a JSON object: %w", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	transport := conn.Streamable(url)
	if strings.HasPrefix(scenario, "auth/") {
		h, err := oauthHandler(scenario, params)
		if err != nil {
			return err
		}
		transport.OAuthHandler = h
	}
	reg := conn.NewRegistry()
	sup, err := conn.Start(ctx, conn.Config{
		Name:               "conformance",
		Transport:          transport,
		Registry:           reg,
		Reconnect:          &policy.Policy{Enabled: false, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 1},
		FailOnStartupError: true,
		Logger:             logger,
		Roots:              []*mcp.Root{{URI: "file:///conformance", Name: "conformance"}},
		Client: &mcp.ClientOptions{
			ElicitationHandler:   acceptDefaults,
			CreateMessageHandler: sample,
		},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := sup.Close(context.WithoutCancel(ctx)); err != nil {
			logger.Error("close", "err", err)
		}
	}()
	calls, err := toolCalls(params)
	if err != nil {
		return err
	}
	if calls == nil {
		for _, t := range reg.Tools() {
			calls = append(calls, toolCall{Name: t.Raw.Name, Arguments: arguments(t.Raw.InputSchema)})
		}
	}
	for _, c := range calls {
		res, err := reg.Call(ctx, conn.PublicToolName("conformance", c.Name), c.Arguments)
		if err != nil {
			logger.Warn("tool call failed", "tool", c.Name, "err", err)
			continue
		}
		logger.Info("tool called", "tool", c.Name, "is_error", res.IsError)
	}
	return nil
}

// toolCall is one call a scenario asks for.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// toolCalls returns the calls listed under "toolCalls" in the scenario's
// context, or nil when it lists none.
func toolCalls(params map[string]any) ([]toolCall, error) {
	raw, ok := params["toolCalls"]
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var calls []toolCall
	if err := json.Unmarshal(b, &calls); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: toolCalls is not a list of {name, arguments}: %w", err)
	}
	for i, c := range calls {
		if c.Name == "" {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: toolCalls[%d] has no name", i)
		}
		if c.Arguments == nil {
			calls[i].Arguments = map[string]any{}
		}
	}
	return calls, nil
}

// sample answers a sampling request with a fixed assistant message.
func sample(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Model: "conformance", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
}

// acceptDefaults accepts an elicitation with the default of every
// property of the requested schema that has one.
func acceptDefaults(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	content := map[string]any{}
	for name, p := range properties(req.Params.RequestedSchema) {
		if d, ok := p["default"]; ok {
			content[name] = d
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// arguments builds a tool call's arguments from its input schema, as a
// model would: each property's default, else a plain value of its type
// for the required ones.
func arguments(schema any) map[string]any {
	args := map[string]any{}
	required := map[string]bool{}
	if m, ok := asMap(schema); ok {
		if rs, ok := m["required"].([]any); ok {
			for _, r := range rs {
				if s, ok := r.(string); ok {
					required[s] = true
				}
			}
		}
	}
	for name, p := range properties(schema) {
		if d, ok := p["default"]; ok {
			args[name] = d
			continue
		}
		if !required[name] {
			continue
		}
		switch p["type"] {
		case "number", "integer":
			args[name] = len(args) + 1
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			args[name] = "test"
		}
	}
	return args
}

// properties returns a JSON schema's properties, whatever Go type the
// schema was decoded into.
func properties(schema any) map[string]map[string]any {
	out := map[string]map[string]any{}
	m, ok := asMap(schema)
	if !ok {
		return out
	}
	props, _ := m["properties"].(map[string]any)
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			out[name] = pm
		}
	}
	return out
}

func asMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	return m, m != nil
}
