package console

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
)

// sandboxedHost is a testHost whose servers say what their sandboxes allow.
type sandboxedHost struct {
	*testHost
	lines map[string][]string
}

func (h sandboxedHost) Servers() []Server {
	var out []Server
	for _, s := range h.testHost.Servers() {
		out = append(out, sandboxedServer{Server: s, lines: h.lines[s.Status().Server]})
	}
	return out
}

type sandboxedServer struct {
	Server
	lines []string
}

func (s sandboxedServer) Sandbox() []string { return s.lines }

func TestStatusShowsTheSandbox(t *testing.T) {
	h := newTestHost(t, Options{})
	h.add("boxed", 3).rec.Expect(t, wait, conn.Established)
	h.add("free", 3).rec.Expect(t, wait, conn.Established)
	lines := []string{"read: everything; not /home/u/.ssh", "write: /w", "network: none", "limits: memoryMB 256"}
	cons := New(sandboxedHost{h, map[string][]string{"boxed": lines}}, Options{Clock: h.clk})
	defer cons.Close()
	var got StatusReport
	do(t, cons, "GET", "/api/status", nil, &got)
	if len(got.Servers) != 2 {
		t.Fatalf("servers: %+v", got.Servers)
	}
	if diff := cmp.Diff(lines, got.Servers[0].Sandbox); diff != "" {
		t.Errorf("boxed's sandbox (-want +got):\n%s", diff)
	}
	if got.Servers[1].Sandbox != nil {
		t.Errorf("an unsandboxed server shows a sandbox: %q", got.Servers[1].Sandbox)
	}
}
