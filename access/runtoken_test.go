package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunToken: a host given no token makes one, writes it mode 0600 to
// the state directory (0700) under the bound address, and reuses it at
// the next start on that fixed port; a file that others can read is not
// reused.
func TestRunToken(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	addrs := []string{"127.0.0.1:8808", "127.0.0.1:7777"}
	tok := RunToken(addrs)
	if err := CheckToken(tok); err != nil {
		t.Errorf("the made token fails CheckToken: %v", err)
	}
	want := filepath.Join(state, "mcpfsm", "127.0.0.1-8808.token")
	f, err := WriteTokenFile("127.0.0.1:8808", tok)
	if err != nil || f != want {
		t.Fatalf("WriteTokenFile = %s, %v; want %s", f, err, want)
	}
	fi, err := os.Stat(f)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want mode 0600", f, fi, err)
	}
	if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) != tok {
		t.Errorf("%s holds %q, not the token", f, b)
	}
	if fi, err := os.Stat(filepath.Join(state, "mcpfsm")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v, want mode 0700", fi, err)
	}
	if again := RunToken(addrs); again != tok {
		t.Error("the next start on the same port made a new token")
	}
	if fresh := RunToken([]string{"127.0.0.1:0"}); fresh == tok {
		t.Error("port 0 reused a token")
	}
	if err := os.Chmod(want, 0o644); err != nil {
		t.Fatal(err)
	}
	if fresh := RunToken(addrs); fresh == tok {
		t.Error("with the file readable by others, its token was reused")
	}
	if _, err := WriteTokenFile("127.0.0.1:8808", tok); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(want); fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten with mode %v", fi.Mode().Perm())
	}
	t.Setenv("XDG_STATE_HOME", "relative/dir")
	t.Setenv("HOME", "/home/someone")
	if d, _ := StateDir(); d != "/home/someone/.local/state/mcpfsm" {
		t.Errorf("StateDir with a relative XDG_STATE_HOME = %s", d)
	}
}
