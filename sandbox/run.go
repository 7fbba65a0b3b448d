package sandbox

import (
	"io"
	"log/slog"
	"os"
)

// Options tune a [Run].
type Options struct {
	// Logger receives what the sandbox refused ("the sandbox refused a
	// connection to evil.example:443"); nil discards it.
	Logger *slog.Logger
}

// StderrWatch is a writer for the program's standard error, from which
// the Run learns that an allocation failed (see [Run.Limit]); nil when the
// Spec sets no memory limit.
func (r *Run) StderrWatch() io.Writer {
	if r.spec.MemoryMB <= 0 {
		return nil
	}
	return r.oom
}

// Limit names the sandbox limit that the process, which ended as st
// says, ran into, such as "out of memory under the sandbox's memoryMB
// 256"; "" when none is known. It knows of a memory limit from what the
// program wrote to [Run.StderrWatch], and from the memory cgroup's count
// of the processes the kernel killed for it.
func (r *Run) Limit(st *os.ProcessState) string {
	if r.spec.MemoryMB <= 0 || (st != nil && st.Success()) || !r.oom.sawOOM() && !r.cgroupOOM() {
		return ""
	}
	return memoryLimit(r.spec.MemoryMB)
}
