package e2e_test

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
)

// httpProcess is the fixture serving Streamable HTTP in a process of its
// own, so that a test can stop or kill it.
type httpProcess struct {
	cmd *exec.Cmd
	url string
}

// startHTTPProcess starts the fixture with -http and waits for its URL.
// Cleanup kills and reaps it.
func startHTTPProcess(t *testing.T, e *env) *httpProcess {
	t.Helper()
	cmd := exec.Command(e.bin, "-http")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "testserver: listening "); ok {
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		return &httpProcess{cmd: cmd, url: u}
	case <-time.After(wait):
		t.Fatalf("HTTP fixture printed no URL within %v", wait)
		return nil
	}
}

// signal sends sig to the server process.
func (h *httpProcess) signal(t *testing.T, sig syscall.Signal) { signal(t, h.cmd, sig) }

// signal sends sig to cmd's process.
func signal(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// kill kills the server and waits until it is gone, so that the next
// connection is refused.
func (h *httpProcess) kill(t *testing.T) {
	t.Helper()
	h.signal(t, syscall.SIGKILL)
	_ = h.cmd.Wait()
}

// TestFrozenHTTPServerIsALossNeverHalted: a Streamable HTTP server frozen
// (SIGSTOP) after connect answers nothing, and the SDK's session Close
// waits for its DELETE. The keep-alive reports the loss within about two
// intervals; the supervisor keeps retrying (a transport without a process
// never halts) and reconnects once the server thaws.
func TestFrozenHTTPServerIsALossNeverHalted(t *testing.T) {
	const keepAlive = 200 * time.Millisecond
	e := newEnv(t)
	h := startHTTPProcess(t, e)
	e.start(conn.Config{Transport: conn.Streamable(h.url), Reconnect: fast(100), KeepAlive: keepAlive,
		ConnectTimeout: 500 * time.Millisecond, CloseTimeout: time.Second})
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("before")
	h.signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	took := time.Since(frozen)
	t.Logf("loss after %v: %v", took, lost.Err)
	if limit := 2*keepAlive + 2*slack; took > limit {
		t.Errorf("loss after %v, want within about two keep-alive intervals (%v)", took, limit)
	}
	e.rec.Await(t, wait, conn.FailedRetrying) // an attempt against the frozen server
	h.signal(t, syscall.SIGCONT)
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("after")
	if n := e.rec.Count(conn.Halted); n != 0 {
		t.Errorf("halted %d times on a transport without a process:\n%s", n, e.rec.Dump())
	}
}

// TestRefusedHTTPConnectionIsUnavailableAndALoss: with the server killed
// (connection refused) and no ping due, a call fails with ErrUnavailable,
// and the refusal ends the generation at once: a loss.
func TestRefusedHTTPConnectionIsUnavailableAndALoss(t *testing.T) {
	e := newEnv(t)
	h := startHTTPProcess(t, e)
	e.start(conn.Config{Transport: conn.Streamable(h.url), Reconnect: fast(2), KeepAlive: time.Hour})
	e.rec.Await(t, wait, conn.Established)
	e.mustEcho("before")
	h.kill(t)
	start := time.Now()
	_, err := e.call("echo", map[string]any{"text": "anyone?"})
	t.Logf("call: %v", err)
	if !errors.Is(err, conn.ErrUnavailable) {
		t.Errorf("call to a refused server: %v, want ErrUnavailable", err)
	}
	lost := e.rec.Await(t, wait, conn.LostReconnecting)
	took := time.Since(start)
	t.Logf("loss after %v: %v", took, lost.Err)
	if took > 2*time.Second {
		t.Errorf("loss %v after the refused call, want at once", took)
	}
}

// TestHTTPOutageNoticedByDefault: with Config.KeepAlive zero, an HTTP
// server that goes away is a loss by the next default keep-alive ping,
// before the SDK's own event-stream retries give up (13 s at the
// earliest).
func TestHTTPOutageNoticedByDefault(t *testing.T) {
	e := newEnv(t)
	h := startHTTPProcess(t, e)
	e.start(conn.Config{Transport: conn.Streamable(h.url), Reconnect: fast(2)})
	e.rec.Await(t, wait, conn.Established)
	h.kill(t)
	killed := time.Now()
	lost := e.rec.Await(t, 2*wait, conn.LostReconnecting)
	took := time.Since(killed)
	t.Logf("loss after %v: %v", took, lost.Err)
	if limit := conn.DefaultHTTPKeepAlive + 2*time.Second; took > limit {
		t.Errorf("loss after %v, want within the default keep-alive (%v)", took, limit)
	}
}
