package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Report words a violation for a person: the seed, the invariant and
// what broke it, the last lines of the run's log, where the run's trace
// was written (traceFile, for fsmdot -trace; "" for none) and the command
// that replays it; replay is that command's flags (-seed S, or -schedule
// FILE, and -bug NAME for a planted bug).
func Report(res *Result, traceFile, replay string) string {
	var b strings.Builder
	v := res.Violation
	fmt.Fprintf(&b, "sim: seed %d: %v\n", res.Schedule.Seed, v)
	fmt.Fprintf(&b, "  the last %d lines of the run:\n", len(res.Tail))
	for _, l := range res.Tail {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	if traceFile != "" {
		last := 1 // the supervisor that ran last, where the run broke
		if len(res.Moves) > 0 {
			last = res.Moves[len(res.Moves)-1].Inc
		}
		fmt.Fprintf(&b, "  trace: %s (supervisors sim-1 to sim-%d; draw the last with go run ./cmd/fsmdot -trace %s -server %s)\n",
			traceFile, last, traceFile, traceServer(last))
	}
	fmt.Fprintf(&b, "  replay: go test ./conn/sim -run 'TestSim$' %s -v\n", replay)
	return b.String()
}

// WriteTrace writes the run's transitions to dir as a trace of
// JSON lines (package fsm/trace), one supervisor per server name
// (sim-1, sim-2, ... for each config reload), and returns the file.
func WriteTrace(res *Result, dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := writeTrace(f, res.Moves); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// WriteSchedule writes s as JSON, for -schedule.
func WriteSchedule(s Schedule, path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadSchedule reads a schedule WriteSchedule wrote.
func ReadSchedule(path string) (Schedule, error) {
	var s Schedule
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: not a schedule: %w", path, err)
	}
	return s, nil
}

// Faults counts the faulty processes and the steps of s.
func (s Schedule) Faults() (procs, steps int) {
	for _, p := range s.Procs {
		if p != (Proc{}) {
			procs++
		}
	}
	return procs, len(s.Steps)
}
