package host_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/host"
)

// lockedBuffer is a bytes.Buffer safe for the supervisors' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A host without a Logger logs to slog.Default(), as a conn.Supervisor
// does: a server that fails is not silent.
func TestNilLoggerIsSlogDefault(t *testing.T) {
	var buf lockedBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	cfg, err := config.Parse([]byte(`{"mcpServers": {"bad": {"command": "sh", "args": ["-c", "exit 3"],
		"reconnect": {"enabled": false}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(host.Options{StartTimeout: 20 * time.Second})
	_ = h.Start(context.Background(), cfg)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "server=bad") || !strings.Contains(buf.String(), "status 3") {
		t.Errorf("slog.Default() got:\n%s\nwant the failure of server bad", buf.String())
	}
}
