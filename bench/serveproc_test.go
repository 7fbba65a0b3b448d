package bench_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a server process of the serve benchmarks, on loopback: the
// fixture serving Streamable HTTP itself, or mcpfsm serve -listen.
type proc struct {
	cmd  *exec.Cmd
	url  string        // its MCP endpoint
	done chan struct{} // closed when its stderr is read to the end

	mu     sync.Mutex
	alarms []string // the first lines of its stderr that said ERROR or panic
	last   []string // its last lines
}

// keepLines bounds proc.tail.
const keepLines = 40

// startProc starts bin with args and env (added to this process's
// environment less any OTEL_ variable), and waits for the line of its
// stderr that names its URL: the text after marker, up to a space or a
// quote. The rest of its stderr is read as it comes, so that its logging
// never blocks it, and its last lines are kept for [proc.logTail]. It is
// stopped at the end of tb.
func startProc(tb testing.TB, marker string, env []string, bin string, args ...string) *proc {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if _, rest, ok := strings.Cut(line, marker); ok && !sent {
				if f := strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '"' }); len(f) > 0 {
					found <- f[0]
					sent = true
				}
			}
			p.keep(line)
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	tb.Cleanup(func() { p.stop(tb) })
	select {
	case p.url = <-found:
		return p
	case <-p.done:
		tb.Fatalf("%s ended before serving:\n%s", bin, strings.Join(p.lines(), "\n"))
	case <-time.After(wait):
		tb.Fatalf("%s did not serve within %v", bin, wait)
	}
	return nil
}

// keep adds a line of p's stderr to what it keeps: the first keepLines
// lines that said ERROR or panic, and the last keepLines lines.
func (p *proc) keep(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if (strings.Contains(line, "ERROR") || strings.Contains(line, "panic")) && len(p.alarms) < keepLines {
		p.alarms = append(p.alarms, line)
	}
	if len(p.last) == keepLines {
		p.last = p.last[1:]
	}
	p.last = append(p.last, line)
}

func (p *proc) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(append(slices.Clone(p.alarms), "..."), p.last...)
}

// logTail logs what p's stderr last said, for a failure.
func (p *proc) logTail(tb testing.TB) {
	tb.Logf("%s %v (pid %d), the end of its stderr:\n%s", p.cmd.Path, p.cmd.Args[1:], p.pid(), strings.Join(p.lines(), "\n"))
}

// stop ends p with SIGTERM (killed after the harness's wait), once.
func (p *proc) stop(tb testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(wait):
		tb.Errorf("%s still ran %v after SIGTERM; killed", p.cmd.Path, wait)
		_ = p.cmd.Process.Kill()
		<-exited
	}
	<-p.done
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// treeUsage is what the kernel says of a tree of processes: how many, and
// their resident memory summed two ways. RSS counts each process's
// resident pages whole, so the pages of one binary that many processes
// share are counted once per process; PSS divides each shared page among
// the processes that map it, so it adds up to what the tree holds.
type treeUsage struct {
	procs    int
	rss, pss int64 // bytes
}

// usageOf sums the usage of the processes roots and all their
// descendants.
func usageOf(roots ...int) (treeUsage, error) {
	pids, err := descendants(roots...)
	if err != nil {
		return treeUsage{}, err
	}
	var u treeUsage
	for _, pid := range pids {
		rss, pss, ok := memOf(pid)
		if !ok {
			continue // ended meanwhile, or a zombie, which holds no memory
		}
		u.procs++
		u.rss += rss
		u.pss += pss
	}
	return u, nil
}

// descendants returns roots and every process whose parent chain leads
// to one of them, from /proc.
func descendants(roots ...int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return nil, fmt.Errorf("reading /proc: %v (%d processes)", err, len(stats))
	}
	children := map[int][]int{}
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(strings.Fields(string(data[:i]))[0])
		ppid, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := append([]int(nil), roots...)
	seen := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out, nil
}

// memOf reads a process's Rss and Pss from /proc/PID/smaps_rollup; ok
// is false for a process that is gone or a zombie (whose rollup is
// empty).
func memOf(pid int) (rss, pss int64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "Rss":
			rss = n * 1024
		case "Pss":
			pss = n * 1024
		}
	}
	return rss, pss, rss > 0
}

// clockTick is the unit of the CPU times of /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuOf sums the CPU time (user and system) that the processes roots and
// their descendants have used.
func cpuOf(roots ...int) (time.Duration, error) {
	pids, err := descendants(roots...)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		// After the comm: state(3) ppid(4) ... utime(14) stime(15).
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 13 {
			continue
		}
		ut, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 == nil && err2 == nil {
			sum += time.Duration(ut+st) * clockTick
		}
	}
	return sum, nil
}
