package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front/internal/bridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server that needs a sign-in (conn.NeedsAuthorization) has serve start
// one (package signin's Flows), and the front asks the person it is for
// to open its authorization URL: each client of the sign-in's subject
// that declared URL-mode elicitation (2025-11-25) gets an
// elicitation/create with "mode": "url" (on stdio the one client, whose
// subject is the operator's, ""), at once or, for a client that connects
// meanwhile, when it has initialized. When the sign-in ends, the clients
// asked get notifications/elicitation/complete. A 2026-07-28 client has
// no session to be asked on outside a call: its call to the server is
// answered with the URL elicitation as an input request (the era's
// multi round-trip result, where its request declared URL-mode
// elicitation), then with the isError that says how to sign in; a client
// that cannot be asked reads the URL in that isError at once
// (Options.SignInHint).

// signInAskTimeout bounds how long the front waits for a client's answer
// to a sign-in's URL elicitation.
const signInAskTimeout = 15 * time.Minute

// AskSignIn asks the clients of subject ("" for the stdio client, the
// operator) to open authURL, the authorization URL of the sign-in id to
// server, with a URL-mode elicitation; clients that connect before
// [Front.EndSignIn] are asked when they have initialized. A client that
// did not declare URL-mode elicitation is not asked. It returns how many
// clients were asked now; it does not wait for their answers.
func (f *Front) AskSignIn(subject, server, authURL, id string) int {
	a := &signInAsk{subject: subject, server: server, url: authURL, id: id, asked: map[*client]bool{}}
	f.mu.Lock()
	if f.signIns == nil {
		f.signIns = map[string]*signInAsk{}
	}
	f.signIns[id] = a
	f.mu.Unlock()
	n := 0
	for _, c := range f.all() {
		if f.ask(c, a) {
			n++
		}
	}
	return n
}

// EndSignIn forgets the sign-in id and tells the clients asked to open
// its URL that it has ended (notifications/elicitation/complete).
func (f *Front) EndSignIn(id string) {
	f.mu.Lock()
	a := f.signIns[id]
	delete(f.signIns, id)
	var asked []*client
	if a != nil {
		for c := range a.asked {
			asked = append(asked, c)
		}
	}
	f.mu.Unlock()
	for _, c := range asked {
		if ss := c.session(); ss != nil {
			ctx, cancel := context.WithTimeout(c.ctx, rootsTimeout)
			if err := ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id}); err != nil {
				f.opts.Logger.Debug("sign-in completion not sent: "+err.Error(), "server", a.server)
			}
			cancel()
		}
	}
}

// askSignIns asks c to open the URLs of the sign-ins under way that are
// its subject's (c has just initialized).
func (c *client) askSignIns() {
	f := c.f
	f.mu.Lock()
	var all []*signInAsk
	for _, a := range f.signIns {
		all = append(all, a)
	}
	f.mu.Unlock()
	for _, a := range all {
		f.ask(c, a)
	}
}

// ask sends c the URL elicitation of a, once, if a is for c's subject and
// c declared URL-mode elicitation.
func (f *Front) ask(c *client, a *signInAsk) bool {
	if c.kind == subjectClient || c.subject != a.subject || (a.subject == "" && c.kind != stdioClient) {
		return false
	}
	ss := c.session()
	if ss == nil || !elicitsURL(ss) {
		return false
	}
	f.mu.Lock()
	if f.signIns[a.id] != a || a.asked[c] {
		f.mu.Unlock()
		return false
	}
	a.asked[c] = true
	f.mu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, signInAskTimeout)
		defer cancel()
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "url", URL: a.url, ElicitationID: a.id,
			Message: signInMessage(a.server)})
		switch {
		case err != nil:
			f.opts.Logger.Info("sign-in request not answered: "+err.Error(), "server", a.server)
		case res.Action != "accept":
			f.opts.Logger.Info("sign-in request "+res.Action+"d by the client", "server", a.server)
		}
	}()
	return true
}

// elicitsURL reports whether the client of ss declared URL-mode
// elicitation.
func elicitsURL(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil && !modern(ss)
}

// signInHint is Options.SignInHint for be's server and caller.
func (f *Front) signInHint(be backend) string {
	if f.opts.SignInHint == nil {
		return ""
	}
	return f.opts.SignInHint(be.server, be.subject)
}

// askInCall asks the client of a 2026-07-28 call (one bridged across
// round trips) to open the URL of the sign-in under way to be's server
// for its subject, as an input request of the call. It returns when the
// client has answered, or at once when there is no such call or sign-in,
// or the client did not declare URL-mode elicitation in its request.
func (c *client) askInCall(ctx context.Context, be backend) {
	b := bridge.Of(ctx)
	if b == nil {
		return
	}
	f := c.f
	f.mu.Lock()
	var a *signInAsk
	for _, x := range f.signIns {
		if x.server == be.server && x.subject == be.subject {
			a = x
		}
	}
	f.mu.Unlock()
	if a == nil {
		return
	}
	req := &mcp.ElicitParams{Mode: "url", URL: a.url, ElicitationID: a.id, Message: signInMessage(a.server)}
	if !b.Declares(req) {
		return // an Ask would fail the call: the isError says how to sign in
	}
	res, err := b.Ask(ctx, be.server, req)
	if err != nil {
		f.opts.Logger.Debug("sign-in not asked in the call: "+err.Error(), "server", a.server)
	} else if r, ok := res.(*mcp.ElicitResult); ok && r.Action != "accept" {
		f.opts.Logger.Info("sign-in request "+r.Action+"d by the client", "server", a.server)
	}
}

func signInMessage(server string) string {
	return fmt.Sprintf("Server %q needs you to sign in. Open this link to sign in; mcpfsm connects to it as soon as you have.", server)
}

// A 2026-07-28 client is listed, for each server whose credential is its
// caller's own (Options.CallerSignIn) and whose instance of the client
// waits for that caller's sign-in, one tool of the front's own, named as
// the server's tool signInTool would be (mcp__<server>__authenticate),
// as Claude Code lists one for a server that needs authentication: the
// era has no request outside a call that could ask the caller to sign
// in. Calling it starts or joins the caller's sign-in and is answered as
// a call to the server is meanwhile (askInCall, then the isError with
// the caller's own URL). The entry goes once the instance is up; a
// server's real tool of that name is never shadowed.
const signInTool = "authenticate"

// awaitingSignIn are the servers whose instance of c waits for its
// caller's sign-in (none but for a 2026-07-28 client with a subject).
func (c *client) awaitingSignIn() []string {
	if c.kind != subjectClient {
		return nil
	}
	c.mu.Lock()
	instances := c.instanceSet()
	c.mu.Unlock()
	var out []string
	for _, server := range c.callerServers() {
		in := instances[server]
		if in == nil {
			continue
		}
		if sup := in.Running(); sup != nil && sup.Status().State == conn.NeedsAuthorization {
			out = append(out, server)
		}
	}
	return out
}

// signInEntries adds to want and defs, c's served tools, the sign-in
// tool of each of servers under the name the front would serve that
// server's tool signInTool by (its own in raw mode when no tool has it),
// unless a tool is served by that name; it returns them by name.
func (c *client) signInEntries(servers []string, want map[string]*mcp.Tool, defs map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for _, server := range servers {
		name := conn.PublicToolName(server, signInTool)
		if c.f.opts.Names == NamesRaw {
			if _, taken := want[signInTool]; !taken {
				name = signInTool
			}
		}
		if _, taken := want[name]; taken {
			continue
		}
		def := &mcp.Tool{Name: name, Title: "Sign in to " + server,
			Description: fmt.Sprintf("Server %q needs you to sign in before its tools are listed. Call this tool to get the sign-in link; open it, then list the tools again.", server),
			InputSchema: &jsonschema.Schema{Type: "object"}}
		raw, err := json.Marshal(def)
		if err != nil {
			continue
		}
		want[name], defs[name], out[name] = def, raw, server
	}
	return out
}

// signInHandler answers a call of server's sign-in tool, served as
// name: with the caller's sign-in link while its instance waits for it.
func (c *client) signInHandler(name, server string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, end := c.begin(ctx, req.Session, server, bridge.Of(ctx))
		defer end()
		be, err := c.backend(ctx, server)
		if errors.Is(err, errServerDown) {
			return errorResult(c.f.describe(be, toolOp(name), nil, "")), nil
		}
		if err != nil {
			return errorResult(c.f.refusal(server, toolOp(name), err)), nil
		}
		defer be.done()
		if st, ok := be.status(); ok && st.State == conn.NeedsAuthorization {
			c.askInCall(ctx, be)
			return errorResult(c.f.describe(be, toolOp(name), nil, "")), nil
		}
		c.update() // the entry goes, the server's tools come
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("server %q: signed in; list the tools again to see its tools", server)}}}, nil
	}
}
