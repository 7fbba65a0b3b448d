package front

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's per-caller rules (package authz; Backends.Guard) decides
// what each client sees and may use: a tool, prompt or resource whose
// rules the client's caller does not pass is not in its lists (and its
// lists change, with list_changed to it alone, when a reload changes the
// rules), and a request of it is refused with a JSON-RPC error naming
// the missing scope; a call past the caller's rate is answered at once
// with a tool error naming the limit and when it frees. Each decision is
// counted (Options.Tally, Options.OnRefused) and a refusal audited.
// The auditor, below, writes the audit record of every request: the
// refusals admit makes and the outcome of each request served.

// guard decides the requests to server: none without Backends.
func (f *Front) guard(server string) authz.Guard {
	if f.opts.Backends == nil {
		return authz.Guard{}
	}
	return f.opts.Backends.Guard(server)
}

// sees reports whether c's caller may see server's kind named name.
func (c *client) sees(server string, kind authz.Kind, name string) bool {
	if c.kind == stdioClient {
		return true
	}
	ok, _ := c.f.guard(server).Rules.Allow(c.caller, kind, name)
	return ok
}

// callerOf is the caller of a request of c's: the credential it
// carries, or, on the stdio front, the operator.
func (c *client) callerOf(extra *mcp.RequestExtra) authz.Caller {
	if c.kind == stdioClient {
		return c.caller
	}
	if extra != nil && extra.TokenInfo != nil {
		return tokenCaller(extra.TokenInfo)
	}
	return c.caller
}

// ownerOf is the owner of a result of c's request made with extra
// (results.limit).
func (c *client) ownerOf(extra *mcp.RequestExtra) resultOwner {
	if caller := c.callerOf(extra); caller.Subject != "" {
		return resultOwner{subject: caller.Subject}
	}
	return resultOwner{clientID: c.id}
}

// tokenCaller is the caller of a request authenticated as info. The
// operator is the static token's TokenInfo only ([access.Operator]): an
// OAuth token is never the operator, whatever its subject. A nil info is a
// caller without a credential: no subject, no scopes.
func tokenCaller(info *auth.TokenInfo) authz.Caller {
	if info == nil {
		return authz.Caller{}
	}
	return authz.Caller{Subject: info.UserID, Scopes: info.Scopes, Operator: access.Operator(info)}
}

// admit decides a request of c's to server's kind named name (the
// server's own name, or a resource's URI). A refusal is counted and
// audited, and returned as the error the client gets: a *jsonrpc.Error
// for a missing scope, a *authz.LimitError past the rate.
func (c *client) admit(ss *mcp.ServerSession, extra *mcp.RequestExtra, server string, kind authz.Kind, name, served string) error {
	f := c.f
	caller := c.callerOf(extra)
	v, err := f.guard(server).Check(caller, kind, name)
	if f.opts.Tally != nil {
		f.opts.Tally.Add(server, caller, v)
	}
	if v == authz.Allowed {
		return nil
	}
	if f.opts.OnRefused != nil {
		f.opts.OnRefused(server, v)
	}
	outcome := audit.OutcomeRateLimited
	if v == authz.Denied {
		outcome = audit.OutcomeDenied
	}
	f.audit.outcome(ss, extra, auditKinds[kind], server, served, outcome)
	// A missing scope is invalid params, as a name the server does not
	// have is, with the refusal's text.
	var denied *authz.DeniedError
	if errors.As(err, &denied) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: denied.Error()}
	}
	return err
}

var auditKinds = map[authz.Kind]string{authz.Tool: audit.KindTool, authz.Prompt: audit.KindPrompt, authz.Resource: audit.KindResource}

// auditor writes the front's audit records (Options.Audit) with the
// front's clock. A nil log records nothing. It has no lock of its own:
// audit.Log serialises its writers. The Front holds one, and the request
// handlers of every client call it once a request ends or is refused.
type auditor struct {
	log   *audit.Log
	clock clock.Clock
}

// request records a finished request of ss, which started at start, and
// lets more, if not nil, add to the record.
func (a auditor) request(ss *mcp.ServerSession, extra *mcp.RequestExtra, kind, server, name string, start time.Time,
	args json.RawMessage, res *mcp.CallToolResult, err error, more func(*audit.Record)) {
	if a.log == nil {
		return
	}
	r := audit.Record{Time: start, Server: server, Kind: kind, Name: name,
		Outcome:  string(conn.ClassifyCall(res, err)),
		Duration: float64(a.clock.Since(start)) / float64(time.Millisecond),
		ArgBytes: len(args), Args: args}
	fillCaller(&r, ss, extra)
	if more != nil {
		more(&r)
	}
	a.log.Record(r)
}

// outcome records a request of ss that the front answered itself, with
// outcome.
func (a auditor) outcome(ss *mcp.ServerSession, extra *mcp.RequestExtra, kind, server, name, outcome string) {
	if a.log == nil {
		return
	}
	r := audit.Record{Time: a.clock.Now(), Server: server, Kind: kind, Name: name, Outcome: outcome}
	fillCaller(&r, ss, extra)
	a.log.Record(r)
}

// fillCaller sets the session and subject of r from the request's.
func fillCaller(r *audit.Record, ss *mcp.ServerSession, extra *mcp.RequestExtra) {
	if ss != nil {
		r.Session = ss.ID()
	}
	if extra != nil && extra.TokenInfo != nil {
		r.Subject = extra.TokenInfo.UserID
	}
}
