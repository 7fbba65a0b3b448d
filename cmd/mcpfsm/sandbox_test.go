package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/sandbox"
)

// TestCheckPrintsTheSandbox: check prints each stdio server's effective
// sandbox (the keys are read, not called ignored), -sandbox-all confines
// the servers that say nothing, and a sandbox the machine cannot give fails
// the check naming what is missing and the fix.
func TestCheckPrintsTheSandbox(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	os.WriteFile(cfg, []byte(`{
		"sandbox": {"filesystem": {"denyRead": ["~/.ssh"]}, "network": {"allowedDomains": ["example.com"]}},
		"servers": {
			"boxed": {"command": "sh", "sandboxEnabled": true, "sandbox": {"filesystem": {"allowWrite": ["${workspaceFolder}/out"]}, "limits": {"memoryMB": 256}}},
			"free": {"command": "sh"},
			"lean": {"command": "/bin/sh", "sandboxEnabled": true, "sandbox": {"filesystem": {"allowRead": []}}}
		}}`), 0o644)
	home, _ := os.UserHomeDir()
	state := filepath.Join(dir, "state")
	t.Setenv("XDG_STATE_HOME", state)
	os.MkdirAll(filepath.Join(state, "mcpfsm"), 0o700) // denied when it exists
	ws := t.TempDir()
	// What memoryMB bounds depends on the cgroups this machine gives.
	memoryBound := "a memory cgroup: shared memory and memfd count"
	if d := (&sandbox.Spec{MemoryMB: 1}).Describe(); !strings.Contains(d[len(d)-1], memoryBound) {
		memoryBound = "private memory only: shared memory and memfd are not bounded, as "
	}
	code, out, errOut := runCmd(t, "check", "-config", cfg, "-workspace", ws)
	if code != exitOK || strings.Contains(errOut, "ignored") {
		t.Fatalf("check: exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"  sandbox:   read: everything; not " + home + "/.ssh, " + state + "/mcpfsm (mcpfsm's state)\n             write: " + ws + "/out\n             network: example.com through mcpfsm's proxy; no Unix sockets\n" +
			"             limits: memoryMB 256 (" + memoryBound,
		// What the sandbox adds is marked: the program's file, not its
		// directory, and the working directory.
		"  sandbox:   read: only /bin (what running needs), /sbin (what running needs), /usr (what running needs), ",
		", " + ws + " (what running needs), /bin/sh (what running needs)",
		"free: stdio sh",
		`  sandbox:   none ("sandboxEnabled": true, or serve -sandbox-all, confines it)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runCmd(t, "check", "-config", cfg, "-sandbox-all")
	if strings.Contains(out, "sandbox:   none") || strings.Count(out, "network: example.com") != 3 {
		t.Errorf("check -sandbox-all left a server unsandboxed:\n%s", out)
	}

	if os.Geteuid() == 0 && (&sandbox.Spec{MaxProcs: 8}).Check() != nil {
		os.WriteFile(cfg, []byte(`{"servers": {"boxed": {"command": "sh", "sandboxEnabled": true, "sandbox": {"limits": {"maxProcs": 8}}}}}`), 0o644)
		code, _, errOut = runCmd(t, "check", "-config", cfg)
		want := "mcpfsm check: server boxed: sandbox unavailable: limits.maxProcs: mcpfsm runs as root, the kernel does not apply RLIMIT_NPROC to root, and there is no pids cgroup ("
		if code != exitFail || !strings.HasPrefix(errOut, want) || !strings.HasSuffix(errOut, "(run mcpfsm as an ordinary user, or remove limits.maxProcs)\n") {
			t.Errorf("check of maxProcs as root: exit %d, stderr:\n%s\nwant:\n%s", code, errOut, want)
		}
	}
}
