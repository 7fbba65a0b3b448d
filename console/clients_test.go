package console

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
)

// instancedHost is a testHost whose servers run per-client instances.
type instancedHost struct {
	*testHost
	by map[string]map[conn.State]int
}

func (h instancedHost) Servers() []Server {
	var out []Server
	for _, s := range h.testHost.Servers() {
		out = append(out, instancedServer{Server: s, by: h.by[s.Status().Server]})
	}
	return out
}

type instancedServer struct {
	Server
	by map[conn.State]int
}

func (s instancedServer) Instances() map[conn.State]int { return s.by }

// The status shows each server's per-client instances by state, and
// its callers' requests of the last hour with what was refused.
func TestStatusShowsInstancesAndCallers(t *testing.T) {
	h := newTestHost(t, Options{})
	h.add("fs", 3).rec.Expect(t, wait, conn.Established)
	h.add("gh", 3).rec.Expect(t, wait, conn.Established)
	tally := authz.NewTally(h.clk)
	tally.Add("gh", authz.Caller{Subject: "oauth:sub:alice"}, authz.Allowed)
	tally.Add("gh", authz.Caller{Subject: "oauth:sub:alice"}, authz.Denied)
	tally.Add("gh", authz.Caller{Subject: "token", Operator: true}, authz.Allowed)
	by := map[string]map[conn.State]int{"fs": {conn.Established: 2, conn.Connecting: 1}}
	cons := New(instancedHost{h, by}, Options{Clock: h.clk, Callers: tally.Counts})
	defer cons.Close()
	var got StatusReport
	do(t, cons, "GET", "/api/status", nil, &got)
	if len(got.Servers) != 2 {
		t.Fatalf("servers: %+v", got.Servers)
	}
	if diff := cmp.Diff(map[string]int{"established": 2, "connecting": 1}, got.Servers[0].Instances); diff != "" {
		t.Errorf("fs's instances (-want +got):\n%s", diff)
	}
	if got.Servers[1].Instances != nil || got.Servers[0].Callers != nil {
		t.Errorf("gh's instances %v, fs's callers %v; want none", got.Servers[1].Instances, got.Servers[0].Callers)
	}
	want := []CallerCount{{Subject: "token", Operator: true, Allowed: 1}, {Subject: "oauth:sub:alice", Allowed: 1, Denied: 1}}
	if diff := cmp.Diff(want, got.Servers[1].Callers); diff != "" {
		t.Errorf("gh's callers (-want +got):\n%s", diff)
	}
}
