package audit_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/audit"
	"github.com/mcpfsm/mcpfsm/conn"
)

func readLines(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func TestRecordsWithoutValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	args := json.RawMessage(`{"password":"hunter2"}`)
	l.Record(audit.Record{Time: at, Session: "s1", Subject: "alice", Server: "fs", Kind: audit.KindTool,
		Name: "mcp__fs__write", Outcome: "ok", Duration: 1.5, ArgBytes: len(args), Args: args})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "hunter2") {
		t.Fatalf("the trail holds an argument value:\n%s", raw)
	}
	want := []audit.Record{{Time: at, Session: "s1", Subject: "alice", Server: "fs", Kind: audit.KindTool,
		Name: "mcp__fs__write", Outcome: "ok", Duration: 1.5, ArgBytes: 22}}
	if d := cmp.Diff(want, readLines(t, path)); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}

func TestArgsOptIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{Args: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(audit.Record{Server: "fs", Kind: audit.KindTool, Args: json.RawMessage(`{"path":"/tmp"}`)})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, path); len(got) != 1 || string(got[0].Args) != `{"path":"/tmp"}` {
		t.Fatalf("records %+v, want the arguments kept", got)
	}
}

// blockedWriter blocks every Write until released, then keeps what it
// is given.
type blockedWriter struct {
	release chan struct{}
	mu      *sync.Mutex
	got     *strings.Builder
}

func newBlockedWriter(release chan struct{}) blockedWriter {
	return blockedWriter{release: release, mu: new(sync.Mutex), got: new(strings.Builder)}
}

func (w blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

// With the writer stuck, Record still returns at once: the queue fills,
// then records are dropped and counted. Every record is written or
// counted as dropped. (The writer buffers what it takes while more is
// queued, so how many it holds when its write blocks depends on the
// schedule.)
func TestFullQueueDropsInsteadOfBlocking(t *testing.T) {
	w := newBlockedWriter(make(chan struct{}))
	l := audit.New(w, audit.Options{Queue: 4})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			l.Record(audit.Record{Server: "fs", Kind: audit.KindTool})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked behind a stuck writer")
	}
	dropped := l.Dropped()
	if dropped == 0 {
		t.Error("no record dropped with a queue of 4 and a stuck writer")
	}
	close(w.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	written := int64(strings.Count(w.got.String(), "\n"))
	if written+dropped != 100 {
		t.Errorf("%d written and %d dropped of 100 records", written, dropped)
	}
}

// Record racing Close neither panics nor blocks.
func TestRecordDuringClose(t *testing.T) {
	l := audit.New(newBlockedWriter(closedChan()), audit.Options{Queue: 8})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				l.Record(audit.Record{Server: "fs"})
			}
		})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func closedChan() chan struct{} { c := make(chan struct{}); close(c); return c }

// TestPolicyOutcomesAreTheirOwn: a refusal by the per-caller policy is
// never read as one of conn's outcomes, and survives the trail.
func TestPolicyOutcomesAreTheirOwn(t *testing.T) {
	for _, o := range []string{audit.OutcomeDenied, audit.OutcomeRateLimited} {
		for _, c := range []conn.Outcome{conn.OutcomeOK, conn.OutcomeToolError, conn.OutcomeUnavailable, conn.OutcomeTimeout, conn.OutcomeCanceled, conn.OutcomeError} {
			if o == string(c) {
				t.Errorf("audit outcome %q is also conn's", o)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(audit.Record{Subject: "alice", Server: "gh", Kind: audit.KindTool, Name: "mcp__gh__delete_repo", Outcome: audit.OutcomeDenied})
	l.Record(audit.Record{Subject: "alice", Server: "gh", Kind: audit.KindTool, Name: "mcp__gh__get_issue", Outcome: audit.OutcomeRateLimited})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, path)
	if len(got) != 2 || got[0].Outcome != "denied" || got[1].Outcome != "rate-limited" {
		t.Errorf("records: %+v", got)
	}
}

// TestRedactHidesSecretsByValue: with Options.Redact, a configured secret
// in a resource URI or (with Args) an argument is written hidden.
func TestRedactHidesSecretsByValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const secret = "supersecret-env-value-123"
	hide := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted fs.env.API_TOKEN]") }
	l, err := audit.Open(path, audit.Options{Args: true, Redact: hide})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(audit.Record{Subject: "oauth:sub:alice", Server: "fs", Kind: audit.KindResource, Name: "db://x?key=" + secret,
		Outcome: "ok", Args: json.RawMessage(`{"token":"` + secret + `"}`)})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), secret) || strings.Count(string(raw), "[redacted fs.env.API_TOKEN]") != 2 {
		t.Errorf("the trail:\n%s\nwant the secret hidden twice", raw)
	}
	if recs := readLines(t, path); len(recs) != 1 || recs[0].Subject != "oauth:sub:alice" {
		t.Errorf("records %+v", recs)
	}
}
