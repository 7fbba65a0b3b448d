//go:build linux

package proc

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestExitWatch: the exits of many processes at once (more than one
// epoll_wait batch), one that exited before it was watched, and a watch
// after the set was emptied (its goroutine gone) are all reported, and
// each process can then be reaped at once.
func TestExitWatch(t *testing.T) {
	start := func(args ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	await := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no exit reported for %s", what)
		}
	}
	for round := range 2 {
		const n = 100
		cmds := make([]*exec.Cmd, n)
		exited := make([]chan struct{}, n)
		for i := range n {
			cmds[i] = start("sleep", "60")
			exited[i] = make(chan struct{})
			if !exitWatch(cmds[i].Process.Pid, func() { close(exited[i]) }) {
				t.Skip("pidfds are not available here; cmd.Wait is the fallback")
			}
		}
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		for i, c := range cmds {
			await(exited[i], "a killed sleep")
			if err := c.Wait(); err == nil {
				t.Errorf("round %d: a SIGKILLed sleep exited cleanly", round)
			}
		}
	}
	// A process that is gone before it is watched: its stdout's EOF comes
	// with its exit (it is a zombie a moment later, still unreaped).
	c := exec.Command("true")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(out); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	if !exitWatch(c.Process.Pid, func() { close(done) }) {
		t.Fatal("exitWatch refused a zombie")
	}
	await(done, "a process that exited first")
	if err := c.Wait(); err != nil {
		t.Errorf("true: %v", err)
	}
}

// exitedEarly reports nothing for a process that still runs, and once it
// has exited, its exit is reported exactly once however many tell of it
// (the reaper's goroutine included).
func TestExitedEarly(t *testing.T) {
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	done := make(chan struct{})
	if !exitWatch(c.Process.Pid, func() {
		if calls.Add(1) == 1 {
			close(done)
		}
	}) {
		t.Skip("pidfds are not available here; cmd.Wait is the fallback")
	}
	exitedEarly(c.Process.Pid)
	if n := calls.Load(); n != 0 {
		t.Fatalf("a running process was reported exited %d times", n)
	}
	_ = c.Process.Kill()
	// Tell of it until it is reported, from several goroutines at once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					exitedEarly(c.Process.Pid)
					runtime.Gosched()
				}
			}
		})
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed process's exit was not reported")
	}
	wg.Wait()
	exitedEarly(c.Process.Pid) // once more, after the report: nothing
	if err := c.Wait(); err == nil {
		t.Error("a SIGKILLed sleep exited cleanly")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the exit was reported %d times, want 1", n)
	}
}

// TestTerminateWhileReaping: a shutdown asked for while the process's exit
// is being reaped closes its stdin and sends no signal of its own, even
// with no grace at all: the reaping kills the group, and the exit report must
// not blame a signal of the supervisor's for an exit that came first.
func TestTerminateWhileReaping(t *testing.T) {
	c := exec.Command("sleep", "60")
	ownGroup(c)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_ = c.Process.Kill()
	_ = c.Wait() // its group is gone: a stray signal would find nothing
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &Process{pid: c.Process.Pid, stdin: w, exited: make(chan struct{}), reaping: true}
	if ch := p.terminate(0); ch != p.exited {
		t.Error("terminate did not return the exited channel")
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("stdin read after terminate: %d, %v; want its end", n, err)
	}
	if s := p.sentSignal(); s != "" {
		t.Errorf("terminate while reaping sent %s", s)
	}
}
