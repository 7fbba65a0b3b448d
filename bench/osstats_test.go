package bench_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// osUsage is what the operating system says about this process: its OS
// threads, how many of them are blocked waiting for a child process, and
// its resident memory. On a system without /proc every figure is 0 and ok
// is false.
type osUsage struct {
	ok      bool
	threads int   // Threads in /proc/self/status
	waiting int   // threads blocked in wait4 or waitid
	rss     int64 // VmRSS, bytes
}

// waitSyscalls are the numbers of wait4 and waitid, by architecture, as
// /proc/self/task/*/syscall reports them.
var waitSyscalls = map[string][]string{
	"amd64": {"61", "247"},
	"arm64": {"260", "95"},
	"386":   {"114", "284"},
}

func osStats() osUsage {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return osUsage{}
	}
	u := osUsage{ok: true}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "Threads":
			u.threads = int(n)
		case "VmRSS":
			u.rss = n * 1024 // kB
		}
	}
	u.waiting = waitingThreads()
	return u
}

// waitingThreads counts the threads blocked in a process wait: the OS
// threads a cmd.Wait holds for as long as its child runs.
func waitingThreads() int {
	nums := waitSyscalls[runtime.GOARCH]
	tasks, _ := filepath.Glob("/proc/self/task/*/syscall")
	n := 0
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		for _, num := range nums {
			if f[0] == num {
				n++
			}
		}
	}
	return n
}

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
