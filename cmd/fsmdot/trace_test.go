package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm"
)

var traceFile = filepath.Join("testdata", "trace.jsonl")

// TestFsmdotTrace: -trace draws git's path with a count per edge taken,
// bold in DOT, and git's last state highlighted; fs's steps are not
// counted.
func TestFsmdotTrace(t *testing.T) {
	out := mustRun(t, "-trace", traceFile, "-server", "git")
	for _, want := range []string{
		`"connecting" -> "established" [label="connected ×2", color="#0a58ca", fontcolor="#0a58ca", penwidth=3];`,
		`"lost-reconnecting" -> "connecting" [label="backoff-elapsed ×1", color="#0a58ca", fontcolor="#0a58ca", penwidth=3];`,
		// dispose is declared once, from live, and drawn from its cluster.
		`"live" -> "disposing" [label="dispose ×1", ltail="cluster_live", color="#0a58ca", fontcolor="#0a58ca", penwidth=3];`,
		`"established" -> "lost-reconnecting" [label="connection-lost ×1", color="#0a58ca", fontcolor="#0a58ca", penwidth=3];`,
		`"disposed" [label="disposed\nnothing left running", peripheries=2, fillcolor="#cfe2ff", color="#0a58ca", penwidth=3, style="rounded,filled,bold"];`,
		`"connecting" -> "exhausted" [label="attempt-failed [budget spent]"];`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-trace output lacks %s", want)
		}
	}
	if strings.Count(out, "×") != 5 {
		t.Errorf("-trace output counts %d edges, want the 5 git took:\n%s", strings.Count(out, "×"), out)
	}
	spec := conn.Table()
	want := spec.DOTOverlay(fsm.Overlay[conn.State]{
		Highlight: []conn.State{conn.Disposed},
		Taken: map[fsm.DrawnEdge[conn.State]]int{
			{From: conn.Connecting, To: conn.Established, Label: "connected"}:             2,
			{From: conn.Established, To: conn.LostReconnecting, Label: "connection-lost"}: 1,
			{From: conn.LostReconnecting, To: conn.Connecting, Label: "backoff-elapsed"}:  1,
			{From: "live", To: conn.Disposing, Label: "dispose"}:                          1,
			{From: conn.Disposing, To: conn.Disposed, Label: "disposed"}:                  1,
		},
	})
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("-trace (-want +got):\n%s", diff)
	}

	mmd := mustRun(t, "-trace", traceFile, "-server", "fs", "-format", "mermaid")
	for _, want := range []string{"connecting --> exhausted : attempt-failed [budget spent] ×1", "class exhausted highlight"} {
		if !strings.Contains(mmd, want) {
			t.Errorf("-trace -server fs -format mermaid lacks %q:\n%s", want, mmd)
		}
	}
	if strings.Count(mmd, "×") != 1 {
		t.Errorf("mermaid counts %d edges, want fs's one", strings.Count(mmd, "×"))
	}

	// The same trace as lines were written before steps had machine, when
	// and extra draws the same.
	before := filepath.Join("testdata", "trace-before.jsonl")
	if diff := cmp.Diff(out, mustRun(t, "-trace", before, "-server", "git")); diff != "" {
		t.Errorf("-trace of the former lines (-now +before):\n%s", diff)
	}
	if diff := cmp.Diff(mmd, mustRun(t, "-trace", before, "-server", "fs", "-format", "mermaid")); diff != "" {
		t.Errorf("-trace -format mermaid of the former lines (-now +before):\n%s", diff)
	}
}

// TestFsmdotTraceRefusals: a corrupted trace is refused naming its step
// and line; a trace of several servers needs -server; usage errors.
func TestFsmdotTraceRefusals(t *testing.T) {
	bad := filepath.Join("testdata", "trace-corrupt.jsonl")
	code, out, errOut := fsmdot(t, "-trace", bad)
	if code != exitFail || out != "" || !strings.Contains(errOut, bad+`: step 4 (line 5): no edge "connected" from "disposed"`) {
		t.Errorf("corrupt trace: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-trace", traceFile}, exitUsage, "has the steps of several servers (fs, git); pick one with -server"},
		{[]string{"-trace", traceFile, "-server", "db"}, exitUsage, `-server "db": the trace ` + traceFile + " has no steps of it; its servers: fs, git"},
		{[]string{"-server", "git"}, exitUsage, "-server needs -trace"},
		{[]string{"-trace", ""}, exitUsage, "-trace needs a file"},
		{[]string{"-write", "x", "-trace", traceFile}, exitUsage, "-trace cannot be combined"},
		{[]string{"-trace", filepath.Join("testdata", "none.jsonl")}, exitFail, "none.jsonl"},
	} {
		code, out, errOut := fsmdot(t, tt.args...)
		if code != tt.code || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("fsmdot %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tt.args, " "), code, out, errOut, tt.code, tt.want)
		}
	}
}
