//lint:file-ignore SA1019 roots and logging are deprecated upstream (SEP-2577) but still relayed.

package front

import "github.com/modelcontextprotocol/go-sdk/mcp"

// newServer is the MCP server that serves c.
func (f *Front) newServer(c *client) *mcp.Server {
	// Tools (and resources and prompts) come and go with the supervised
	// servers: always announce the capabilities with list_changed, even
	// with nothing listed yet.
	instructions := "Tools of several MCP servers, supervised by mcpfsm: a tool named mcp__<server>__<tool> " +
		"belongs to <server>. While a server reconnects, its tools answer at once with an error saying when to retry."
	if f.opts.Names == NamesRaw {
		instructions = "Tools of several MCP servers, supervised by mcpfsm, under their servers' own names " +
			"(mcp__<server>__<tool> for a name an earlier server has). While a server reconnects, its tools answer at once with an error saying when to retry."
	}
	opts := &mcp.ServerOptions{
		Capabilities:            &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Instructions:            instructions,
		InitializedHandler:      c.initialized,
		RootsListChangedHandler: c.roots.changed,
	}
	opts.Capabilities.Logging = &mcp.LoggingCapabilities{}
	opts.Capabilities.Extensions = map[string]any{taskExtension: map[string]any{}} // tasks.go
	if f.opts.Limits.on() {                                                        // a cut result is read as a resource (limits.go)
		opts.Capabilities.Resources = &mcp.ResourceCapabilities{}
	}
	if f.opts.Catalog != nil {
		opts.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
		opts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		opts.Capabilities.Completions = &mcp.CompletionCapabilities{}
		opts.SubscribeHandler, opts.UnsubscribeHandler = c.subscribe, c.unsubscribe
		opts.CompletionHandler = c.complete
		opts.Instructions += " Prompts are named like tools. A resource is listed under its server's own URI, or as " +
			RoutePrefix + "<server>/<uri> when an earlier server lists the same URI."
	}
	s := mcp.NewServer(f.opts.Implementation, opts)
	s.AddReceivingMiddleware(c.searchMiddleware) // innermost: a found tool, called by its name
	s.AddReceivingMiddleware(c.roots.middleware, c.levels.middleware, c.downMiddleware, c.callerMiddleware)
	if f.opts.Catalog != nil {
		// Every read is routed here, listed or not: a URI built from a
		// template, or named by a tool's resource link, reaches its server.
		s.AddReceivingMiddleware(c.readMiddleware)
	}
	s.AddReceivingMiddleware(f.results.middleware(c.ownerOf)) // a kept result (limits.go), before the catalog's reads
	s.AddReceivingMiddleware(c.bridges.middleware, eraMiddleware)
	s.AddReceivingMiddleware(c.tasksMiddleware) // a tool call run as a task goes on through the bridge (tasks.go)
	c.addTaskMethods(s)
	s.AddReceivingMiddleware(traceMiddleware(f.opts.Tracer)) // outermost: added last
	s.AddSendingMiddleware(keepAnswer)
	return s
}
