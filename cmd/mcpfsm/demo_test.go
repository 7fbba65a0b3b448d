package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the demo as a user would (its servers are this test
// binary, run as real processes) and checks what it shows.
func TestDemo(t *testing.T) {
	pidlog := filepath.Join(t.TempDir(), "pids")
	t.Setenv(demoPIDLogEnv, pidlog)
	begin := time.Now()
	code, out, errOut := runCmd(t, "demo")
	took := time.Since(begin)
	if code != 0 {
		t.Fatalf("demo: exit %d, stderr:\n%s\nstdout:\n%s", code, errOut, out)
	}
	if took > 30*time.Second {
		t.Errorf("demo took %v, want under 30s", took)
	}
	// Each server's story, in order: broken fails and gives up; flaky is
	// lost, calls fail fast, flaky reconnects and calls succeed again.
	for _, story := range [][]string{{
		"broken connection failed; retrying in 300ms (attempt 1/3)",
		"path: connecting -attempt-failed-> failed-retrying",
		"broken giving up after 3 failed attempts",
		"every server process has exited",
	}, {
		"flaky  connection lost; reconnecting in 1s (attempt 1/5)",
		"path: connecting -connected-> established -connection-lost-> lost-reconnecting",
		`call   mcp__flaky__echo failed fast in`,
		`(state lost-reconnecting)`,
		"flaky  reconnected (attempt 1/5); tools re-synced",
		`call   mcp__flaky__echo -> "call `,
		"every server process has exited",
	}} {
		at := 0
		for _, want := range story {
			i := strings.Index(out[at:], want)
			if i < 0 {
				t.Fatalf("demo output lacks %q after offset %d:\n%s", want, at, out)
			}
			at += i + len(want)
		}
	}
	// Failing fast means not waiting for the reconnect: the demo's backoff
	// is 1s, so a failure that took half of it waited for something.
	m := regexp.MustCompile(`the slowest failure took ([0-9.]+[^0-9.);\s]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("demo output lacks the slowest failure:\n%s", out)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d >= 500*time.Millisecond {
		t.Errorf("failed calls were not fast: the slowest took %s (%v)", m[1], err)
	}
	allGone(t, pidlog)
}
