package front

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a bytes.Buffer safe for the audit writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Every tool call is one audit record naming the server, the tool, the
// outcome and the argument size, and never an argument value.
func TestToolCallsAreAudited(t *testing.T) {
	var out syncBuffer
	log := audit.New(&out, audit.Options{})
	r := newRigWith(t, rigOptions{audit: log})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := map[string]any{"password": "hunter2"}
	if _, err := r.sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__a__echo", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sess.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__b__echo"}); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "hunter2") {
		t.Fatalf("the audit trail holds an argument value:\n%s", text)
	}
	var recs []audit.Record
	for line := range strings.Lines(text) {
		var rec audit.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2:\n%s", len(recs), text)
	}
	raw, _ := json.Marshal(args)
	if a := recs[0]; a.Server != "a" || a.Name != "mcp__a__echo" || a.Kind != audit.KindTool || a.Outcome != "ok" || a.ArgBytes != len(raw) || a.Args != nil {
		t.Errorf("first record %+v", a)
	}
	if b := recs[1]; b.Server != "b" || b.Outcome != "ok" || b.ArgBytes > len("{}") {
		t.Errorf("second record %+v", b)
	}
}
