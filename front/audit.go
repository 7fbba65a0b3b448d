package front

import (
	"encoding/json"
	"time"

	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// audited records a finished request of ss in the audit trail, if there
// is one.
func (c *client) audited(ss *mcp.ServerSession, extra *mcp.RequestExtra, kind, server, name string, start time.Time,
	args json.RawMessage, res *mcp.CallToolResult, err error) {
	c.auditedWith(ss, extra, kind, server, name, start, args, res, err, nil)
}

// auditedWith is audited, with more set in the record.
func (c *client) auditedWith(ss *mcp.ServerSession, extra *mcp.RequestExtra, kind, server, name string, start time.Time,
	args json.RawMessage, res *mcp.CallToolResult, err error, more func(*audit.Record)) {
	f := c.f
	if f.opts.Audit == nil {
		return
	}
	r := audit.Record{Time: start, Server: server, Kind: kind, Name: name,
		Outcome:  string(conn.ClassifyCall(res, err)),
		Duration: float64(f.opts.Clock.Since(start)) / float64(time.Millisecond),
		ArgBytes: len(args), Args: args}
	if ss != nil {
		r.Session = ss.ID()
	}
	if extra != nil && extra.TokenInfo != nil {
		r.Subject = extra.TokenInfo.UserID
	}
	if more != nil {
		more(&r)
	}
	f.opts.Audit.Record(r)
}

// auditOutcome records a request of ss that the front answered itself,
// with outcome, in the audit trail, if there is one.
func (c *client) auditOutcome(ss *mcp.ServerSession, extra *mcp.RequestExtra, kind, server, name, outcome string) {
	f := c.f
	if f.opts.Audit == nil {
		return
	}
	r := audit.Record{Time: f.opts.Clock.Now(), Server: server, Kind: kind, Name: name, Outcome: outcome}
	if ss != nil {
		r.Session = ss.ID()
	}
	if extra != nil && extra.TokenInfo != nil {
		r.Subject = extra.TokenInfo.UserID
	}
	f.opts.Audit.Record(r)
}
