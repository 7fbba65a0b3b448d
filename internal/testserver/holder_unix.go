//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// startHolder starts this program with -sleep in a session of its own, so
// that killing this process's group misses it, holding stdout and stderr
// open; it appends the holder's PID to pidfile.
func startHolder(pidfile string) {
	cmd := exec.Command(os.Args[0], "-sleep", "60s")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testserver: holder:", err)
		os.Exit(2)
	}
	appendLine(pidfile, fmt.Sprint(cmd.Process.Pid))
}
