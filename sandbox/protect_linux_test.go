//go:build linux

package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// TestAttackRewriteConfig is the second critical escape of issue 46: a
// VS Code workspace whose mcp.json (in .vscode/) makes the workspace
// writable. The sandboxed server tries to rewrite the config file (which
// serve -watch would reload, with an unsandboxed server added), to
// replace the .vscode directory, and git's hooks and config; each is
// refused, while the rest of the workspace stays writable.
func TestAttackRewriteConfig(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".vscode", ".git/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(ws, ".vscode", "mcp.json")
	const config0 = `{"servers": {"fs": {"command": "x", "sandboxEnabled": true,
		"sandbox": {"filesystem": {"allowWrite": ["${workspaceFolder}"]}}}}}`
	os.WriteFile(file, []byte(config0), 0o644)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := *cfg.Servers[0].Sandbox
	for _, action := range []string{
		"write:" + file,
		"write:" + filepath.Join(ws, ".vscode", "settings.json"),
		"rename:" + filepath.Join(ws, ".vscode") + ":" + filepath.Join(ws, "old"),
		"remove:" + filepath.Join(ws, ".vscode"),
		"chmod:" + file,
		"write:" + filepath.Join(ws, ".git", "hooks", "pre-commit"),
		"write:" + filepath.Join(ws, ".git", "config"),
	} {
		got, err := run(t, spec, action)
		if err == nil || !strings.Contains(got, "read-only file system") && !strings.Contains(got, "device or resource busy") {
			t.Errorf("%s: %q, %v; want refused", action, got, err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != config0 {
		t.Errorf("the config file now holds %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Errorf("a git hook was written")
	}
	// Run elsewhere (in the package's directory), the workspace stays
	// writable, its top directory included.
	for _, p := range []string{filepath.Join(ws, "notes.md"), filepath.Join(ws, ".git", "index")} {
		if got, err := run(t, spec, "write:"+p); err != nil {
			t.Errorf("write %s in the workspace: %q, %v", p, got, err)
		}
	}
	// Run as config runs it, in its workspace, where .mcp.json, .claude
	// and the rest are absent: the top directory is split (see
	// TestAttackCreateProtected), its entries stay writable.
	if cwd := cfg.Servers[0].Cwd; cwd != ws {
		t.Fatalf("the server's working directory is %q, want the workspace %q", cwd, ws)
	}
	inWorkspace := func(action string) (string, error) {
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
		out, st := runCmd(t, spec, cmd)
		if !st.Success() {
			return out, errors.New(st.String())
		}
		return out, nil
	}
	if got, err := inWorkspace("write:" + filepath.Join(ws, "new.md")); err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("create a file at the top of the workspace: %q, %v; want permission denied", got, err)
	}
	for _, p := range []string{filepath.Join(ws, "notes.md"), filepath.Join(ws, ".git", "index2")} {
		if got, err := inWorkspace("write:" + p); err != nil {
			t.Errorf("write %s in the workspace: %q, %v", p, got, err)
		}
	}
}

// TestStateDirectoryDenied checks that mcpfsm's state directory (its
// tokens) can be neither read nor written, even inside allowWrite.
func TestStateDirectoryDenied(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", home)
	token := filepath.Join(home, "mcpfsm", "127.0.0.1-8808.token")
	os.MkdirAll(filepath.Dir(token), 0o700)
	os.WriteFile(token, []byte("operator-token"), 0o600)
	spec := sandbox.Spec{AllowWrite: []string{home}}
	if got, err := run(t, spec, "read:"+token); err == nil || strings.Contains(got, "operator-token") {
		t.Errorf("read the token file: %q, %v; want refused", got, err)
	}
	if got, err := run(t, spec, "write:"+token); err == nil {
		t.Errorf("write the token file: %q, %v; want refused", got, err)
	}
	if got, err := run(t, spec, "write:"+filepath.Join(home, "other")); err != nil {
		t.Errorf("write beside the state directory: %q, %v", got, err)
	}
}

// TestNoSilentWidening is the fourth finding of issue 46: with allowRead,
// the sandbox added the parent of a program's bin directory (~/.local for
// ~/.local/bin/uvx, which holds mcpfsm's tokens) and mcpfsm's working
// directory, whatever it was. Now it adds the program's own file and the
// prefix's lib, and refuses to add the home directory.
func TestNoSilentWidening(t *testing.T) {
	prefix := t.TempDir()
	os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)
	os.MkdirAll(filepath.Join(prefix, "lib"), 0o755)
	exe, _ := os.Executable()
	prog := filepath.Join(prefix, "bin", "server")
	if err := os.Link(exe, prog); err != nil {
		data, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(prog, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secret", "bin/sibling", "lib/module"} {
		os.WriteFile(filepath.Join(prefix, f), []byte("content of "+f), 0o644)
	}
	spec := sandbox.Spec{AllowRead: []string{}}
	try := func(action string) (string, error) {
		cmd := exec.Command(prog)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
		out, st := runCmd(t, spec, cmd)
		if !st.Success() {
			return out, errors.New(st.String())
		}
		return out, nil
	}
	for _, f := range []string{"secret", "bin/sibling"} {
		if got, err := try("read:" + filepath.Join(prefix, f)); err == nil {
			t.Errorf("read %s beside the program: %q; want refused", f, got)
		}
	}
	if got, err := try("read:" + filepath.Join(prefix, "lib/module")); err != nil {
		t.Errorf("read the prefix's lib: %q, %v", got, err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	cmd := exec.Command(prog)
	cmd.Dir = home
	_, err = spec.Prepare(cmd, sandbox.Options{})
	if err == nil || !strings.Contains(err.Error(), home+", the home directory") {
		t.Errorf("Prepare in the home directory: %v; want an error naming %s", err, home)
	}
	eff, err := spec.Effective(prog, t.TempDir(), os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(eff.Describe(), "\n")
	if !strings.Contains(lines, prog+" (what running needs)") || strings.Contains(lines, prefix+" (") {
		t.Errorf("Effective.Describe does not mark the program as added, or adds its prefix:\n%s", lines)
	}
}

// TestAttackMetadata is the sixth finding of issue 46: Landlock does not
// cover chmod, chown, utimes or setxattr, and the operator's token went
// from 600 to 644. Outside allowWrite every mount is read-only.
func TestAttackMetadata(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("t"), 0o600)
	own := filepath.Join(work, "own")
	os.WriteFile(own, []byte("o"), 0o600)
	spec := sandbox.Spec{AllowWrite: []string{work}}
	if got, err := run(t, spec, "chmod:"+token); err == nil || !strings.Contains(got, "read-only file system") {
		t.Errorf("chmod outside allowWrite: %q, %v; want read-only file system", got, err)
	}
	if fi, err := os.Stat(token); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the token's mode is now %v, %v", fi.Mode(), err)
	}
	if got, err := run(t, spec, "chmod:"+own); err != nil {
		t.Errorf("chmod inside allowWrite: %q, %v", got, err)
	}
	if got, err := run(t, spec, "write:/dev/null"); err != nil {
		t.Errorf("write /dev/null: %q, %v", got, err)
	}
}

// TestAttackCreateProtected is what issue 46 left open: a protected name
// that does not exist yet (.mcp.json, .claude/settings.json, a git hook
// in a workspace without .git) could be created in a writable workspace,
// and a host that reads it runs what the server wrote there. The server
// runs in its workspace (as config makes it). Each way of creating one
// is refused, nothing is left in the workspace by the sandbox itself, the
// workspace's subdirectories stay writable, and a protected name that
// exists deeper in a writable directory (a nested repository's hooks) is
// read-only.
func TestAttackCreateProtected(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"src", "lib/app/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ws, "src", "evil.json"), []byte(`{"mcpServers": {}}`), 0o644)
	before := listing(t, ws)
	spec := sandbox.Spec{AllowWrite: []string{ws}}
	try := func(action string) (string, error) {
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
		out, st := runCmd(t, spec, cmd)
		if !st.Success() {
			return out, errors.New(st.String())
		}
		return out, nil
	}
	for _, action := range []string{
		"write:" + filepath.Join(ws, ".mcp.json"),
		"write:" + filepath.Join(ws, ".envrc"),
		"create:" + filepath.Join(ws, ".claude", "settings.json"),
		"create:" + filepath.Join(ws, ".vscode", "tasks.json"),
		"create:" + filepath.Join(ws, ".cursor", "mcp.json"),
		"create:" + filepath.Join(ws, ".git", "hooks", "pre-commit"),
		"create:" + filepath.Join(ws, "lib", "app", ".git", "hooks", "pre-commit"),
		"symlink:" + filepath.Join(ws, "src") + ":" + filepath.Join(ws, ".gemini"),
		"rename:" + filepath.Join(ws, "src", "evil.json") + ":" + filepath.Join(ws, ".mcp.json"),
	} {
		if got, err := try(action); err == nil {
			t.Errorf("%s: %q; want refused", action, got)
		}
	}
	if after := listing(t, ws); after != before {
		t.Errorf("the workspace holds\n%s\nafter the attacks, and held\n%s\nbefore", after, before)
	}
	for _, p := range []string{filepath.Join(ws, "src", "new", "file"), filepath.Join(ws, "lib", "app", "main.go")} {
		if got, err := try("create:" + p); err != nil {
			t.Errorf("create %s in the workspace: %q, %v", p, got, err)
		}
	}
	// Outside the working directory, a writable directory keeps its top
	// level creatable: absent names are protected where hosts look.
	out := t.TempDir()
	if got, err := run(t, sandbox.Spec{AllowWrite: []string{out}}, "write:"+filepath.Join(out, "result")); err != nil {
		t.Errorf("write in a writable directory that is not the workspace: %q, %v", got, err)
	}
	eff, err := spec.Effective("/bin/true", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Join(eff.Describe(), "\n"); !strings.Contains(lines, filepath.Join(ws, ".mcp.json")+" (mandatory, absent: nothing can be created in "+ws+")") {
		t.Errorf("Effective.Describe does not say the workspace is split:\n%s", lines)
	}
}

// listing is every path beneath dir, one a line.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, strings.TrimPrefix(p, dir))
		return err
	})
	return strings.Join(out, "\n")
}
