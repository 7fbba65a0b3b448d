//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mcpfsm/mcpfsm/sandbox"
)

// A command in a sandbox that lets it write one directory and reach no
// network. The program that does this calls sandbox.Init first in main
// (here, the test's TestMain does).
func Example() {
	dir, _ := os.MkdirTemp("", "sandbox-example-")
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")
	spec := sandbox.Spec{AllowWrite: []string{out}, DenyRead: []string{"/root", "/home"}}
	os.Mkdir(out, 0o755)

	cmd := exec.Command("/bin/sh", "-c",
		"echo ok > "+out+"/file && echo wrote inside; echo no > "+dir+"/file 2>/dev/null || echo refused outside")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	run, err := spec.Prepare(cmd, sandbox.Options{})
	if err != nil {
		fmt.Println(err) // an *UnavailableError names what this system lacks
		return
	}
	defer run.Close()
	if err := run.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	_ = cmd.Wait()
	fmt.Print(stdout.String())
	// Output:
	// wrote inside
	// refused outside
}
