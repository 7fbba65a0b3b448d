package main

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/host"
)

// reportFailures prints the error (and the last stderr lines) of every
// server of hs that did not come up, and reports whether there was one.
func reportFailures(w io.Writer, cmd string, hs *host.Host, signedIn ...map[string]bool) bool {
	failed := hs.Failures()
	for _, m := range signedIn {
		failed = slices.DeleteFunc(failed, func(st host.ServerStatus) bool { return m[st.Config.Name] })
	}
	for _, st := range failed {
		msg := fmt.Sprint(st.Err)
		fmt.Fprintf(w, "mcpfsm %s: server %s: %s\n", cmd, st.Config.Name, msg)
		if lines := newLines(st.Stderr, msg); len(lines) > 0 {
			fmt.Fprintf(w, "  last lines of its stderr:\n")
			for _, l := range lines {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	return len(failed) > 0
}

// newLines is lines without those already said: in msg (the error
// quotes the last lines of the last process), or earlier in lines (each
// attempt's process printing the same complaint).
func newLines(lines []string, msg string) []string {
	var out []string
	for _, l := range lines {
		if t := strings.TrimSpace(l); t == "" || strings.Contains(msg, t) || slices.Contains(out, l) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// printTools writes one line per tool: public name, server, first line of
// the description.
func printTools(w io.Writer, tools []conn.Tool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tDESCRIPTION")
	for _, t := range tools {
		desc := ""
		if t.Raw != nil {
			desc, _, _ = strings.Cut(strings.TrimSpace(t.Raw.Description), "\n")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Server, strings.TrimSpace(desc))
	}
	tw.Flush()
}

// newLogger builds the slog logger of -log-format and -log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	// Every record passes the registry of configured secrets first.
	switch format {
	case "text":
		return slog.New(secrets.Handler(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(secrets.Handler(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("-log-format %q: use text or json", format)
}

// syncWriter serialises writes to w: the supervisors, the stderr copiers
// and the commands all write to the same stream.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// warnTiming warns about a stdio server whose closeTimeoutMs is too short
// for the shutdown schedule: its grace periods are then shortened.
func warnTiming(w io.Writer, s config.Server) {
	if s.Type != config.TypeStdio {
		return
	}
	closeTimeout := cmp.Or(s.CloseTimeout, conn.DefaultCloseTimeout)
	if g := conn.GracePeriod(conn.DefaultTerminateDuration, closeTimeout); g < conn.DefaultTerminateDuration {
		fmt.Fprintf(w, "%s: warning: closeTimeoutMs %d is shorter than the stdio shutdown schedule (close stdin, %v, SIGTERM, %v, SIGKILL); the grace periods are shortened to %v so that the server is still killed within it\n",
			s.Name, closeTimeout.Milliseconds(), conn.DefaultTerminateDuration, conn.DefaultTerminateDuration, g)
	}
}
