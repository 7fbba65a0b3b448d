package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/fixture"
)

// status and reconnect given no -http find the running host through the
// state directory, and console prints (or opens) its one-time URL.
func TestFindsTheRunningHost(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("MCPFSM_TOKEN", "")
	t.Setenv("MCPFSM_HTTP", "")
	if code, _, errOut := runCmd(t, "status"); code != exitFail || !strings.Contains(errOut, "no running host found") {
		t.Errorf("status with no host: exit %d, stderr %q", code, errOut)
	}
	cfg := writeConfig(t, obj{"mcpServers": obj{"fix": obj{"command": fixture.Build(t)}}})
	stderr, addr, _, stop := hostProcess(t, cfg)
	stderr.waitFor(t, 0, "state=established")
	code, out, errOut := runCmd(t, "status")
	if code != exitOK || !strings.Contains(out, "fix") || !strings.Contains(out, "established") {
		t.Errorf("status without -http: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "reconnect", "fix"); code != exitOK {
		t.Errorf("reconnect without -http: exit %d, stderr:\n%s", code, errOut)
	}
	code, out, errOut = runCmd(t, "console", "-print")
	tok := madeToken(t, addr)
	if want := "http://" + addr + "/?token=" + tok + "\n"; code != exitOK || out != want {
		t.Errorf("console -print: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
	}
	// With $BROWSER, console opens the URL in it: the browser writes it
	// to a FIFO, which the test reads as it arrives.
	opened := filepath.Join(t.TempDir(), "opened")
	if err := syscall.Mkfifo(opened, 0o600); err != nil {
		t.Fatal(err)
	}
	browser := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf %s \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", browser)
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(opened) // returns once the browser closes it
		got <- string(b)
	}()
	if code, out, errOut := runCmd(t, "console"); code != exitOK || !strings.Contains(out, "opened the console") {
		t.Errorf("console: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case u := <-got:
		if want := "http://" + addr + "/?token=" + tok; u != want {
			t.Errorf("the browser opened %q, want %q", u, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the browser was never started")
	}
	stop()
}
