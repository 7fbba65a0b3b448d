package conn_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// productDeps names what a program that imports conn must not link: the
// sandbox's kernel interfaces (Landlock, seccomp, libcap's psx) and any
// package of this module outside the library (conn, fsm, policy and the
// shared internal packages).
func productDeps(deps []string) []string {
	var bad []string
	for _, d := range deps {
		const mod = "github.com/mcpfsm/mcpfsm/"
		switch {
		case strings.Contains(d, "landlock"), strings.Contains(d, "seccomp"), strings.HasSuffix(d, "/psx"):
			bad = append(bad, d)
		case strings.HasPrefix(d, mod):
			rest := strings.TrimPrefix(d, mod)
			top, _, _ := strings.Cut(rest, "/")
			switch top {
			case "conn", "fsm", "policy", "internal":
			default:
				bad = append(bad, d)
			}
		}
	}
	return bad
}

// listDeps returns what pkg links on linux/amd64, as go list -deps says.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestConnLinksNoSandbox: importing conn links neither package sandbox
// nor its kernel interfaces, nor any other package of the gateway; the
// sandbox comes in through Stdio.Launcher. The same check finds them in
// package sandbox, so it can fail.
func TestConnLinksNoSandbox(t *testing.T) {
	if bad := productDeps(listDeps(t, "github.com/mcpfsm/mcpfsm/conn")); len(bad) > 0 {
		t.Errorf("go list -deps ./conn has %q: conn must not link the sandbox or the gateway", bad)
	}
	if bad := productDeps(listDeps(t, "github.com/mcpfsm/mcpfsm/sandbox")); len(bad) < 3 {
		t.Errorf("the check finds only %q in package sandbox, which links landlock, seccomp and psx", bad)
	}
}
