package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// A trace recorded from a real run (start, a crash, the recovery, the
// close) is a path through conn.Table, and draws over its diagram; the
// same trace with a step removed is rejected, naming the step.
func TestTraceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	logA, path := filepath.Join(dir, "a.pids"), filepath.Join(dir, "trace.jsonl")
	tr, err := OpenTrace(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	moved := make(chan conn.Transition, 64)
	h := New(Options{OnTransition: func(t conn.Transition) { tr.Record(t); moved <- t }})
	cfg := mustParse(t, obj{"mcpServers": obj{"a": fixtureServer(t, "-pidlog", logA)}})
	if err := h.Start(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	await := func(want conn.State) {
		t.Helper()
		for {
			select {
			case got := <-moved:
				if got.To == want {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no transition to %s", want)
			}
		}
	}
	await(conn.Established)
	if err := syscall.Kill(fixture.PIDs(t, logA)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(conn.LostReconnecting)
	await(conn.Established)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := trace.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Check(conn.Table(), steps); err != nil {
		t.Fatalf("the recorded trace breaks the table: %v\n%s", err, data)
	}
	var path2 []string
	for _, s := range steps {
		path2 = append(path2, s.To)
		if s.To != string(conn.LostReconnecting) {
			continue
		}
		var x conn.TraceExtra
		if err := json.Unmarshal(s.Extra, &x); err != nil || x.Generation != 1 || x.Delay == "" || x.Cause == "" || s.Machine != "a" {
			t.Errorf("the loss step %+v (extra %+v, %v): want machine a, generation 1, a delay and a cause", s, x, err)
		}
	}
	if got := strings.Join(path2, " "); !strings.HasPrefix(got, "established lost-reconnecting connecting established disposing disposed") {
		t.Errorf("trace path %q", got)
	}
	ov := trace.Overlay(conn.Table(), steps)
	if dot := conn.Table().DOTOverlay(ov); !strings.Contains(dot, "×2") && !strings.Contains(dot, "x2") {
		t.Errorf("the drawn trace does not count the two connections:\n%s", dot)
	}

	// Remove the loss: established is then followed by connecting.
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	corrupt := strings.Join(append(lines[:1:1], lines[2:]...), "\n")
	_, err = trace.Read(strings.NewReader(corrupt))
	if err == nil {
		steps, _ := trace.Read(strings.NewReader(corrupt))
		err = trace.Check(conn.Table(), steps)
	}
	var te *trace.Error
	if !errors.As(err, &te) || te.Step != 2 {
		t.Fatalf("a trace without its loss step: %v, want an error at step 2", err)
	}
}
