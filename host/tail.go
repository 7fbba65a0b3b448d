package host

import (
	"bytes"
	"log/slog"
	"sync"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// tailWriter receives a server's stderr: it logs each line at debug level
// and keeps the last few for [Host.Status]. It is safe for concurrent use.
type tailWriter struct {
	logger *slog.Logger
	server string
	keep   int
	hide   func(string) string // the host's secrets, by value

	mu      sync.Mutex
	partial []byte
	lines   []string
}

func newTailWriter(logger *slog.Logger, server string, keep int, hide func(string) string) *tailWriter {
	return &tailWriter{logger: logger, server: server, keep: keep, hide: hide}
}

// maxLine bounds a buffered partial line.
const maxLine = 4096

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.line(string(bytes.TrimRight(w.partial[:i], "\r")))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > maxLine {
		w.line(string(w.partial[:maxLine]) + "...")
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

// line keeps one line, with the host's secrets hidden by value and
// credential-shaped text masked: the tail is shown in errors and logs.
func (w *tailWriter) line(s string) {
	s = redact.Line(w.hide(s))
	w.logger.Debug("server stderr: "+s, "server", w.server)
	w.lines = append(w.lines, s)
	if len(w.lines) > w.keep {
		w.lines = w.lines[len(w.lines)-w.keep:]
	}
}

// Tail returns the last lines written.
func (w *tailWriter) Tail() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}
