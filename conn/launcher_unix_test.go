//go:build unix

package conn_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// fakeLauncher starts the command itself, or fails with err.
type fakeLauncher struct {
	err error

	mu      sync.Mutex
	started int
	stderr  bytes.Buffer // what StderrWatch got
	closed  int
}

func (l *fakeLauncher) Launch(ctx context.Context, cmd *exec.Cmd, _ *slog.Logger) (conn.Launched, error) {
	if cmd.Process != nil {
		return nil, errors.New("the command has started already")
	}
	if l.err != nil {
		return nil, l.err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.started++
	l.mu.Unlock()
	return (*fakeLaunch)(l), nil
}

type fakeLaunch fakeLauncher

func (f *fakeLaunch) StderrWatch() io.Writer { return writerFunc(f.write) }

func (f *fakeLaunch) write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stderr.Write(p)
}

func (f *fakeLaunch) Limit(st *os.ProcessState) string {
	if st.ExitCode() == 3 {
		return "over the fake launcher's limit"
	}
	return ""
}

func (f *fakeLaunch) Close() {
	f.mu.Lock()
	f.closed++
	f.mu.Unlock()
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// TestLauncherStartsTheCommand: a Stdio's Launcher starts its command;
// the process's stderr reaches the launch's StderrWatch, the limit it
// names is the exit's, and every launch is closed once its process is
// reaped.
func TestLauncherStartsTheCommand(t *testing.T) {
	l := &fakeLauncher{}
	tr := conn.Command("sh", "-c", "echo out of room >&2; exit 3")
	tr.Launcher = l
	rec := conntest.NewRecorder()
	p := policy.Default()
	p.Enabled = false
	sup, err := conn.Start(context.Background(), conn.Config{Name: "fx", Transport: tr, Registry: conn.NewRegistry(),
		Reconnect: &p, OnTransition: rec.OnTransition})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	rec.Expect(t, waitLimit, conn.FailedDisabled)
	var exit *conn.ServerExit
	if err := sup.Status().LastErr; !errors.As(err, &exit) || exit.Limit != "over the fake launcher's limit" {
		t.Errorf("LastErr = %v, want a *ServerExit with the launcher's limit", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// The supervisor may start the server twice (a second, classic
	// handshake); each launch is closed once its process is reaped.
	if l.started == 0 || l.closed != l.started || !strings.Contains(l.stderr.String(), "out of room") {
		t.Errorf("launched %d, closed %d, StderrWatch got %q; want every launch closed and the server's stderr", l.started, l.closed, l.stderr.String())
	}
}

// fixedError is a launcher's error that names its fix by behaviour, as a
// sandbox's does, without knowing package conn.
type fixedError struct{ fix string }

func (e *fixedError) Error() string        { return "this system has no such sandbox" }
func (e *fixedError) PermanentFix() string { return e.fix }

// TestLauncherPermanentError: a launcher's error that matches
// ErrPermanent, or that names its fix by a PermanentFix method, stops the
// supervisor in failed-permanent after one confirming retry, with the
// launcher's fix.
func TestLauncherPermanentError(t *testing.T) {
	cause := errors.New("this system has no such sandbox")
	byFix := &fixedError{fix: "use another system"}
	for name, lerr := range map[string]error{
		"PermanentError": &conn.PermanentError{Fix: "use another system", Err: cause},
		"PermanentFix":   fmt.Errorf("launch: %w", byFix),
	} {
		t.Run(name, func(t *testing.T) {
			tr := conn.Command("true")
			tr.Launcher = &fakeLauncher{err: lerr}
			rec := conntest.NewRecorder()
			clk := clock.NewMock()
			sup, err := conn.Start(context.Background(), conn.Config{Name: "fx", Transport: tr, Registry: conn.NewRegistry(),
				Clock: clk, OnTransition: rec.OnTransition})
			if err != nil {
				t.Fatal(err)
			}
			defer sup.Close(context.Background())
			first := rec.Expect(t, waitLimit, conn.FailedRetrying)[0]
			clk.Add(first.Delay)
			last := rec.Expect(t, waitLimit, conn.Connecting, conn.FailedPermanent)[1]
			var pe *conn.PermanentError
			if !errors.As(last.Err, &pe) || pe.Fix != "use another system" || !errors.Is(last.Err, lerr) {
				t.Errorf("err = %v, want a *PermanentError with the launcher's fix, wrapping its error", last.Err)
			}
		})
	}
}

// TestLauncherValidate: a Launcher's Validate error rejects the Config.
func TestLauncherValidate(t *testing.T) {
	tr := conn.Command("true")
	tr.Launcher = &validatingLauncher{}
	_, err := conn.Start(context.Background(), conn.Config{Name: "fx", Transport: tr, Registry: conn.NewRegistry()})
	var ce *conn.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Transport" || !strings.Contains(err.Error(), "Stdio.Launcher: no good") {
		t.Errorf("err = %v, want a *ConfigError for Transport naming Stdio.Launcher", err)
	}
}

type validatingLauncher struct{ fakeLauncher }

func (*validatingLauncher) Validate() error { return errors.New("no good") }
