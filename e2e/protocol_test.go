package e2e_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// rawCommand is the fixture's raw JSON-RPC server with flags; its stderr
// feeds both the env's start watcher and the returned request log.
func (e *env) rawCommand(flags ...string) (*conn.Stdio, *fixture.RequestLog) {
	cmd := e.command(flags...)
	log := &fixture.RequestLog{}
	cmd.Stderr = io.MultiWriter(e.starts, log)
	return cmd, log
}

// TestOlderProtocolVersions: a server that only speaks an older protocol
// answers initialize with its version; a supervisor pinned to
// conn.ClassicProtocolVersion asks for it with initialize first, accepts
// the older answer, lists and calls.
func TestOlderProtocolVersions(t *testing.T) {
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t)
			cmd, log := e.rawCommand("-raw-protocol", version)
			e.start(conn.Config{Transport: cmd, Reconnect: disabled(), ProtocolVersion: conn.ClassicProtocolVersion})
			e.rec.Await(t, wait, conn.Established)
			if got, want := toolNames(e.reg.Tools()), []string{conn.PublicToolName("fx", "echo")}; !slices.Equal(got, want) {
				t.Fatalf("tools %v, want %v", got, want)
			}
			e.mustEcho("hello " + version)
			reqs := through(t, log, "tools/call")
			if len(reqs) == 0 || reqs[0] != "initialize "+conn.ClassicProtocolVersion {
				t.Errorf("first request %q, want initialize at %s; requests: %q", first(reqs), conn.ClassicProtocolVersion, reqs)
			}
			if e.rec.Count(conn.LostReconnecting)+e.rec.Count(conn.LostDisabled) != 0 {
				t.Errorf("connection lost:\n%s", e.rec.Dump())
			}
		})
	}
}

// TestNewestProtocolFallsBackToInitialize: by default (and with
// Config.ProtocolVersion 2026-07-28) the SDK probes server/discover first;
// a server that answers method-not-found is then initialized the classic
// way at 2025-11-25, and it may answer with an older version still; Status
// names the negotiated version.
func TestNewestProtocolFallsBackToInitialize(t *testing.T) {
	for _, tc := range []struct{ answer, pin string }{
		{"2025-11-25", ""}, {"2024-11-05", ""}, {"2025-11-25", "2026-07-28"},
	} {
		answer := tc.answer
		t.Run(answer+"-pin-"+tc.pin, func(t *testing.T) {
			e := newEnv(t)
			cmd, log := e.rawCommand("-raw-protocol", answer)
			e.start(conn.Config{Transport: cmd, Reconnect: disabled(), ProtocolVersion: tc.pin})
			e.rec.Await(t, wait, conn.Established)
			if got := e.sup.Status().Protocol; got != answer {
				t.Errorf("Status.Protocol %q, want %q", got, answer)
			}
			e.mustEcho("hello " + answer)
			reqs := through(t, log, "tools/call")
			t.Logf("requests: %q", reqs)
			// server/discover carries its version in _meta, not in params.
			if len(reqs) < 2 || reqs[0] != "server/discover" || reqs[1] != "initialize 2025-11-25" {
				t.Errorf("requests %q, want server/discover, then initialize at 2025-11-25", reqs)
			}
		})
	}
}

// through returns log's requests once its tools/call is logged (see
// fixture.RequestLog), or fails t after wait.
func through(t *testing.T, log *fixture.RequestLog, method string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	reqs, err := log.Through(ctx, method)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestRefusedClassicHandshakeIsLearnedOverStdio: with PreferClassic, a
// stdio server that refuses the classic initialize handshake (one of
// 2026-07-28 only) is connected in the same attempt with server/discover,
// by a second process started once the first is gone; the first
// process's exit is no loss of the connection that follows.
func TestRefusedClassicHandshakeIsLearnedOverStdio(t *testing.T) {
	e := newEnv(t)
	e.start(conn.Config{Transport: e.command("-refuse-initialize"), Reconnect: disabled(), PreferClassic: true})
	e.rec.Await(t, wait, conn.Established)
	if st := e.sup.Status(); st.Protocol != conn.StatelessProtocolVersion || st.Attempt != 0 {
		t.Errorf("Status protocol %q attempt %d, want %s and 0", st.Protocol, st.Attempt, conn.StatelessProtocolVersion)
	}
	pids := e.pids()
	if len(pids) != 2 {
		t.Fatalf("%d processes started, want 2 (refused initialize, then server/discover)", len(pids))
	}
	if alive(pids[0]) {
		t.Errorf("the process that refused initialize (%d) is still alive beside its successor", pids[0])
	}
	e.mustEcho("hello")
	e.mustEcho("again")
	if n := e.rec.Count(conn.LostReconnecting) + e.rec.Count(conn.LostDisabled); n != 0 {
		t.Errorf("the connection was lost %d time(s):\n%s", n, e.rec.Dump())
	}
}
