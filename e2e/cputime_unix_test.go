//go:build unix

package e2e_test

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time (user and system) this process has spent.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
