package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/toolsearch"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The names of the front's own tools in search mode.
const (
	SearchToolName = "mcpfsm_search_tools"
	CallToolName   = "mcpfsm_call_tool"
)

// DefaultSearchLimit is how many tools a search answers without a limit;
// MaxSearchLimit bounds what a client may ask.
const (
	DefaultSearchLimit = 5
	MaxSearchLimit     = 50
)

// maxQueryBytes bounds a search's query: a task in words is short.
const maxQueryBytes = 4096

// listed records want (served name -> tool the caller may see) as c's
// searchable tools, and returns what c's server lists in search mode:
// the pinned tools among them, the search tool and the call tool.
// c.view.mu is held.
func (c *client) listed(want map[string]*mcp.Tool, defs map[string]json.RawMessage) (map[string]*mcp.Tool, map[string]json.RawMessage) {
	s := &c.search
	s.mu.Lock()
	if !maps.EqualFunc(s.defs, defs, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
		s.drop()
		s.defs, s.tools = defs, want
	}
	s.mu.Unlock()
	outTools, outDefs := map[string]*mcp.Tool{}, map[string]json.RawMessage{}
	for _, name := range c.f.opts.Tools.Pin {
		if t, ok := want[name]; ok {
			outTools[name], outDefs[name] = t, defs[name]
		}
	}
	for _, t := range []*mcp.Tool{searchToolDef(), callToolDef()} {
		raw, _ := json.Marshal(t)
		outTools[t.Name], outDefs[t.Name] = t, raw
	}
	return outTools, outDefs
}

// toolHandler is the handler of the tool c's server lists as name: the
// front's own in search mode, the routed call otherwise.
func (c *client) toolHandler(name string) mcp.ToolHandler {
	if c.f.opts.Tools.Search {
		switch name {
		case SearchToolName:
			return c.searchHandler
		case CallToolName:
			return c.callHandler
		}
	}
	return c.handler(name)
}

// searchArgs are the search tool's arguments.
type searchArgs struct {
	Query  string `json:"query"`
	Server string `json:"server,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// searchHit is one tool a search answers.
type searchHit struct {
	Name        string               `json:"name"`
	Server      string               `json:"server"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	InputSchema any                  `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	// Status says that the tool's server is not connected now, and
	// what a call gets meanwhile.
	Status string `json:"status,omitempty"`
}

// searchHandler answers the search tool: the best matches among the
// tools c's caller may see and use.
func (c *client) searchHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args searchArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &args); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: the arguments are not an object of query, server and limit: %v", SearchToolName, err)}
	}
	switch {
	case len(args.Query) > maxQueryBytes:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: the query has %d bytes: say what the tool should do in at most %d", SearchToolName, len(args.Query), maxQueryBytes)}
	case args.Limit == 0:
		args.Limit = DefaultSearchLimit
	case args.Limit < 0 || args.Limit > MaxSearchLimit:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: limit %d: give 1 to %d", SearchToolName, args.Limit, MaxSearchLimit)}
	}
	caller := c.callerOf(req.Extra)
	tools, err := c.search.search(args.Query, args.Server, args.Limit, func(name string) bool {
		// What the request's credential may use, besides what the
		// client's list was made for.
		public := c.publicTool(name)
		server, raw, _ := conn.SplitToolName(public)
		if c.kind == stdioClient {
			return true
		}
		ok, _ := c.f.guard(server).Rules.Allow(caller, authz.Tool, c.rawOf(public, raw))
		return ok
	})
	if errors.Is(err, toolsearch.ErrEmptyQuery) {
		return errorResult(fmt.Sprintf("%s: the query has no words: say what the tool should do", SearchToolName)), nil
	}
	if err != nil {
		return errorResult(fmt.Sprintf("%s: %v", SearchToolName, err)), nil
	}
	hits := make([]searchHit, 0, len(tools))
	for _, t := range tools {
		public := c.publicTool(t.Name)
		server := serverOf(public)
		h := searchHit{Name: t.Name, Server: server, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations}
		be := backend{server: server, subject: c.subject, f: c.f}
		if st, ok := be.status(); ok && st.State != conn.Established {
			h.Status = c.f.describe(be, toolOp(t.Name), nil, "a call now is answered with this error")
		}
		hits = append(hits, h)
	}
	out := struct {
		Tools []searchHit `json:"tools"`
	}{hits}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil
}

// rawOf is the server's own name of the tool published as public.
func (c *client) rawOf(public, fallback string) string {
	if t, ok := c.f.opts.Registry.Lookup(public); ok {
		return rawName(t)
	}
	if t, ok := c.reg.Lookup(public); ok {
		return rawName(t)
	}
	return fallback
}

// callArgs are the call tool's arguments.
type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// callHandler answers the call tool: a tools/call of the tool named, on
// the path a direct call takes (downMiddleware, then the tool's
// handler), with the call's _meta and progress token.
func (c *client) callHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args callArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &args); err != nil || args.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: give the tool's name (as %s answers it) and its arguments as an object", CallToolName, SearchToolName)}
	}
	if args.Name == CallToolName || args.Name == SearchToolName {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: call %s directly", CallToolName, args.Name)}
	}
	inner := &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: req.Params.Meta, Name: args.Name, Arguments: args.Arguments}}
	res, err := c.downMiddleware(c.searchedCall)(ctx, "tools/call", inner)
	if err != nil {
		return nil, err
	}
	r, _ := res.(*mcp.CallToolResult)
	return r, nil
}

// searchedCall calls a tool c's caller may see but is not listed in
// search mode, as the SDK calls a listed one; any other name is unknown.
func (c *client) searchedCall(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
	call := req.(*mcp.CallToolRequest)
	name := call.Params.Name
	c.view.mu.Lock()
	_, ok := c.view.toolPublic[name]
	c.view.mu.Unlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: find tools with %s", name, SearchToolName)}
	}
	return c.handler(name)(ctx, call)
}

// searchMiddleware lets a client in search mode call a tool it found by
// its name, as it would call a listed one.
func (c *client) searchMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	if !c.f.opts.Tools.Search {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || c.serves(call.Params.Name) {
			return next(ctx, method, req)
		}
		c.view.mu.Lock()
		_, found := c.view.toolPublic[call.Params.Name]
		c.view.mu.Unlock()
		if found {
			return c.handler(call.Params.Name)(ctx, call)
		}
		return next(ctx, method, req)
	}
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

func searchToolDef() *mcp.Tool {
	return &mcp.Tool{
		Name: SearchToolName,
		Description: "Find the tools that can do a task, among every tool of the MCP servers behind mcpfsm that you may use. " +
			"Say what you want done in words; the answer lists the best matches with their names, descriptions and input schemas. " +
			"Call a tool found with " + CallToolName + ".",
		InputSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"query":  {Type: "string", Description: "what the tool should do, in words"},
				"server": {Type: "string", Description: "only tools of this server"},
				"limit":  {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(MaxSearchLimit)), Description: fmt.Sprintf("at most this many tools (default %d)", DefaultSearchLimit)},
			},
			Required: []string{"query"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Search tools"},
	}
}

func callToolDef() *mcp.Tool {
	return &mcp.Tool{
		Name:        CallToolName,
		Description: "Call a tool found with " + SearchToolName + ": its name as the search answered it, and its arguments as its input schema says.",
		InputSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"name":      {Type: "string", Description: "the tool's name"},
				"arguments": {Type: "object", Description: "the tool's arguments"},
			},
			Required: []string{"name"},
		},
		Annotations: &mcp.ToolAnnotations{Title: "Call a tool"},
	}
}

func ptr[T any](v T) *T { return &v }
