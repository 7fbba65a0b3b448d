package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// startGrandchild starts "sleep 1000" in this process's group, without
// waiting for it: only killing the group ends it early.
func startGrandchild(pidfile string) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testserver: grandchild:", err)
		os.Exit(2)
	}
	if pidfile != "" {
		writePID(pidfile, cmd.Process.Pid)
	}
}

// writePID writes pid to path, then renames, so a reader never sees a
// partial PID.
func writePID(path string, pid int) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintln(pid)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
	if err := os.Rename(tmp, path); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
}

// flood writes to stderr until the process ends.
func flood() {
	line := []byte(strings.Repeat("stderr flood ", 80) + "\n")
	for {
		if _, err := os.Stderr.Write(line); err != nil {
			return
		}
	}
}
