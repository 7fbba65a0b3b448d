package conn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn/internal/proc"
)

func TestStderrTailKeepsTheLastLinesWithinBounds(t *testing.T) {
	tests := []struct {
		name  string
		write []string
		want  []string
	}{
		{"nothing", nil, nil},
		{"one line without newline", []string{"fatal: missing API key"}, []string{"fatal: missing API key"}},
		{"the last five lines", []string{"1\n2\n3\n", "4\n5\n6\n7\n"}, []string{"3", "4", "5", "6", "7"}},
		{"lines split across writes", []string{"fat", "al: x\nsecond", " line\n"}, []string{"fatal: x", "second line"}},
		{"blank lines skipped, controls replaced", []string{"a\x1b[31mred\n\n\r\n"}, []string{"a [31mred"}},
		{"a flood keeps the newest bytes", []string{strings.Repeat("x", 10*MaxCauseBytes) + "\nlast\n"},
			[]string{strings.Repeat("x", MaxCauseBytes-len("\nlast\n")), "last"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tail proc.Tail
			for _, w := range tt.write {
				_, _ = tail.Write([]byte(w))
			}
			if diff := cmp.Diff(tt.want, tailLines(tail.Bytes())); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
	var tail proc.Tail
	for i := range 10000 {
		fmt.Fprintf(&tail, "line %d %s\n", i, strings.Repeat("y", 700))
	}
	lines := tailLines(tail.Bytes())
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	if size > MaxCauseBytes || len(tail.Bytes()) > 2*proc.TailBytes || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "line 9999 ") {
		t.Errorf("after a flood: %d lines of %d bytes, buffer %d bytes, last %q", len(lines), size, len(tail.Bytes()), lines[len(lines)-1])
	}
}

func TestServerExitMessage(t *testing.T) {
	tests := []struct {
		e    ServerExit
		want string
	}{
		{ServerExit{Code: 3, Stderr: []string{"a", "fatal: missing API key"}}, "the server exited: exit status 3; stderr: a | fatal: missing API key"},
		{ServerExit{Code: -1, Signal: "SIGKILL"}, "the server was killed by SIGKILL"},
		{ServerExit{Code: -1, Signal: "SIGTERM", BySupervisor: true}, "the server was killed by SIGTERM (sent by the supervisor after the grace period)"},
		{ServerExit{Code: 2, Limit: "out of memory under the sandbox's memoryMB 256", Stderr: []string{"fatal error: runtime: out of memory"}},
			"the server exited: out of memory under the sandbox's memoryMB 256 (exit status 2); stderr: fatal error: runtime: out of memory"},
		{ServerExit{Code: -1, Signal: "SIGABRT", Limit: "out of memory under the sandbox's memoryMB 64"},
			"the server exited: out of memory under the sandbox's memoryMB 64 (killed by SIGABRT)"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
