package bench_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestUsageOfATree counts a process and its child, and their memory, as
// the serve benchmarks count a server and its backends.
func TestUsageOfATree(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skipf("no /proc/self/smaps_rollup here: %v", err)
	}
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	deadline := time.Now().Add(wait)
	for {
		u, err := usageOf(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if u.procs == 2 {
			if u.rss <= 0 || u.pss <= 0 || u.pss > u.rss {
				t.Errorf("rss %d, pss %d: want 0 < pss <= rss", u.rss, u.pss)
			}
			return
		}
		if u.procs > 2 || time.Now().After(deadline) {
			t.Fatalf("%d processes in the tree of sh, want sh and its sleep", u.procs)
		}
		time.Sleep(time.Millisecond) // the child's start, seen from outside it
	}
}
