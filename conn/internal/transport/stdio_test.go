package transport

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
