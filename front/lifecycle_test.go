package front

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
)

// The lines of a client's instance (its transitions, which say why it
// went down) name the client: its number, kind and subject.
func TestInstanceLogsNameTheirClient(t *testing.T) {
	f := New(Options{Registry: conn.NewRegistry()})
	defer func() { _ = f.Close(t.Context()) }()
	c := f.newClient(subjectClient, authz.Caller{Subject: "alice"})
	defer c.close()
	var buf syncBuffer
	cfg := conn.Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	c.configure("a", &cfg, func(conn.Transition) {})
	cfg.Logger.Warn("connection lost")
	for _, want := range []string{" client=", ` client_kind="2026-07-28 subject"`, " subject=alice"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the instance's log line %q does not name its client (%q)", buf.String(), want)
		}
	}
}
