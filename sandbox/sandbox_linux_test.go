//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/sandbox"
)

// run runs the helper with action inside spec and returns its output and
// how it ended.
func run(t *testing.T, spec sandbox.Spec, action string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_HELPER="+action)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	r, err := spec.Prepare(cmd, sandbox.Options{})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	err = cmd.Wait()
	return out.String(), err
}

func TestReadAllowedAndDenied(t *testing.T) {
	dir := t.TempDir()
	ok, secret := dir+"/ok", dir+"/secret"
	os.WriteFile(ok, []byte("fine"), 0o644)
	os.WriteFile(secret, []byte("hush"), 0o644)
	spec := sandbox.Spec{DenyRead: []string{secret}}
	if out, err := run(t, spec, "read:"+ok); err != nil || out != "fine" {
		t.Errorf("read %s: %q, %v", ok, out, err)
	}
	out, err := run(t, spec, "read:"+secret)
	if err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("read %s: %q, %v; want permission denied", secret, out, err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "hush" {
		t.Errorf("the host cannot read %s: %q, %v", secret, b, err)
	}
}

func TestAllowReadLimitsReads(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	os.WriteFile(in+"/a", []byte("inside"), 0o644)
	os.WriteFile(out+"/b", []byte("outside"), 0o644)
	spec := sandbox.Spec{AllowRead: []string{in}}
	if got, err := run(t, spec, "read:"+in+"/a"); err != nil || got != "inside" {
		t.Errorf("read inside allowRead: %q, %v", got, err)
	}
	if got, err := run(t, spec, "read:"+out+"/b"); err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("read outside allowRead: %q, %v; want permission denied", got, err)
	}
	// Within an allowed tree, a denyRead still wins.
	os.WriteFile(in+"/key", []byte("k"), 0o644)
	spec.DenyRead = []string{in + "/key"}
	if got, err := run(t, spec, "read:"+in+"/key"); err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("read denyRead inside allowRead: %q, %v; want permission denied", got, err)
	}
	if got, err := run(t, spec, "read:"+in+"/a"); err != nil || got != "inside" {
		t.Errorf("read beside a denyRead: %q, %v", got, err)
	}
}

func TestWrites(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	spec := sandbox.Spec{AllowWrite: []string{dir}}
	if got, err := run(t, spec, "write:"+dir+"/new"); err != nil {
		t.Errorf("write inside allowWrite: %q, %v", got, err)
	}
	if b, _ := os.ReadFile(dir + "/new"); string(b) != "written" {
		t.Errorf("the file written inside holds %q", b)
	}
	// With a denyWrite inside, the directory is split: its other entries
	// stay writable, the denied one is not, and (Landlock grants a
	// directory's rights to all beneath it) nothing is created directly
	// in the directory that holds it.
	os.Mkdir(dir+"/ro", 0o755)
	os.Mkdir(dir+"/rw", 0o755)
	spec.DenyWrite = []string{dir + "/ro"}
	for _, p := range []string{dir + "/rw/x", dir + "/new"} {
		if got, err := run(t, spec, "write:"+p); err != nil {
			t.Errorf("write %s beside a denyWrite: %q, %v", p, got, err)
		}
	}
	for _, p := range []string{dir + "/ro/x", other + "/x", dir + "/created"} {
		if got, err := run(t, spec, "write:"+p); err == nil || !strings.Contains(got, "permission denied") {
			t.Errorf("write %s: %q, %v; want permission denied", p, got, err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// No allowWrite: nothing is writable but the null devices.
	if got, err := run(t, sandbox.Spec{}, "write:"+dir+"/again"); err == nil {
		t.Errorf("write with no allowWrite: %q, %v; want permission denied", got, err)
	}
	if got, err := run(t, sandbox.Spec{}, "write:/dev/null"); err != nil {
		t.Errorf("write /dev/null: %q, %v", got, err)
	}
}

func TestChildrenInherit(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/secret", []byte("hush"), 0o644)
	spec := sandbox.Spec{DenyRead: []string{dir}}
	got, err := run(t, spec, "child:read:"+dir+"/secret")
	if err == nil || !strings.Contains(got, "permission denied") {
		t.Errorf("a child read a denied file: %q, %v", got, err)
	}
}
