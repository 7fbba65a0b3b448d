package front

import (
	"encoding/json"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
