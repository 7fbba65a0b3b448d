package sim

import (
	"hash"
	"slices"
	"strings"
	"time"
)

// Canonical returns the lines of a run's log (as Options.Log receives
// them) in their canonical order: the lines of one simulated instant
// sorted, the instants in order. Within an instant the simulator decides
// the order of what it does (the driver's step comes last, once
// everything else that woke at that instant is done), but goroutines of
// conn, of the SDK and of the host's requests that run at the same
// instant are ordered by Go's scheduler, and no simulated time passes
// between them. Two runs that did the same things at the same instants
// have the same canonical log; that is what an exact replay means.
func Canonical(lines []string) []string {
	out := slices.Clone(lines)
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && instantOf(out[j]) == instantOf(out[i]) {
			j++
		}
		slices.Sort(out[i:j])
		i = j
	}
	return out
}

// instantOf is the time stamp that starts a line of a run's log.
func instantOf(line string) string {
	at, _, _ := strings.Cut(strings.TrimLeft(line, " "), " ")
	return at
}

// instantLines gathers the log lines of one instant, for the digest.
type instantLines struct {
	at    time.Duration
	lines []string
}

// add adds a line logged at at, first writing the lines of an earlier
// instant to d, sorted.
func (l *instantLines) add(d hash.Hash64, at time.Duration, line string) {
	if at != l.at {
		l.flush(d)
		l.at = at
	}
	l.lines = append(l.lines, line)
}

// flush writes the gathered lines to d, sorted, each ended by a newline.
func (l *instantLines) flush(d hash.Hash64) {
	slices.Sort(l.lines)
	for _, line := range l.lines {
		d.Write([]byte(line))
		d.Write([]byte{'\n'})
	}
	l.lines = l.lines[:0]
}
