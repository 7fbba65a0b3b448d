package conn_test

import (
	"errors"
	"io"
	"log/slog"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestPublicToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct {
		server, raw string
		want        string // exact, or "" to check only validity and the hash suffix
		hashed      bool
	}{
		{"fs", "read_file", "mcp__fs__read_file", false},
		{"fs", "read-file", "mcp__fs__read-file", false},
		{"fs", "read.file", "", true},
		{"fs", "résumé", "", true},
		{"fs", long, "", true},
		{"a__b", "c", "", true},
		{"fs", "x_0123456789ab", "", true},
		{"fs", "x_0123456789AB", "mcp__fs__x_0123456789AB", false},
		{"fs", strings.Repeat("y", 64-len("mcp__fs__")), "mcp__fs__" + strings.Repeat("y", 64-len("mcp__fs__")), false},
		{"fs", strings.Repeat("y", 65-len("mcp__fs__")), "", true},
	}
	for _, tc := range tests {
		got := conn.PublicToolName(tc.server, tc.raw)
		if !validName.MatchString(got) {
			t.Errorf("PublicToolName(%q, %q) = %q: not a valid public name", tc.server, tc.raw, got)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("PublicToolName(%q, %q) = %q, want %q", tc.server, tc.raw, got, tc.want)
		}
		if hashed := regexp.MustCompile(`_[0-9a-f]{12}$`).MatchString(got); hashed != tc.hashed {
			t.Errorf("PublicToolName(%q, %q) = %q: hashed = %v, want %v", tc.server, tc.raw, got, hashed, tc.hashed)
		}
		if again := conn.PublicToolName(tc.server, tc.raw); again != got {
			t.Errorf("not deterministic: %q then %q", got, again)
		}
	}
	// Names that normalise alike stay distinct.
	a, b := conn.PublicToolName("fs", "a.b"), conn.PublicToolName("fs", "a/b")
	if a == b {
		t.Errorf("a.b and a/b collide: %q", a)
	}
	// A raw name posing as another tool's hashed name is hashed itself.
	crafted := strings.TrimPrefix(conn.PublicToolName("s", "a.b"), "mcp__s__")
	if got := conn.PublicToolName("s", crafted); got == conn.PublicToolName("s", "a.b") {
		t.Errorf("(s, %q) collides with (s, a.b): %q", crafted, got)
	}
	// The server split is unambiguous.
	if conn.PublicToolName("a", "b__c") == conn.PublicToolName("a__b", "c") {
		t.Error("(a, b__c) and (a__b, c) collide")
	}
}

func TestIsCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "DB_PASSWORD": true, "OPENAI_API_KEY": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "NPM_AUTH": true, "AUTH": true, "gh_pat": true, "SESSION_COOKIE": true,
		"MYSQL_PWD": true, "DB_PASS": true, "SMTP_PASS": true, "GPG_PASSPHRASE": true, "SENTRY_DSN": true, "OPENAI_KEY": true,
		"PATH": false, "HOME": false, "GIT_AUTHOR_NAME": false, "PWD": false, "OLDPWD": false, "LANG": false, "AUTHOR": false,
		"PATTERN": false, "COMPASS_HOME": false, "KEYBOARD": false, "DATABASE_URL": false,
	} {
		if got := redact.IsCredentialName(name); got != want {
			t.Errorf("IsCredentialName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHasURLPassword(t *testing.T) {
	for value, want := range map[string]bool{
		"postgres://app:s3cret@db/app": true, "redis://:pw@cache:6379/0": true, " https://u:p@host ": true,
		"postgres://app@db/app": false, "https://example.com/a:b@c": false, "/usr/bin": false, "a:b@c": false, "": false,
	} {
		if got := redact.HasURLPassword(value); got != want {
			t.Errorf("HasURLPassword(%q) = %v, want %v", value, got, want)
		}
	}
}

// hostEnv is a host environment with secrets under innocent names.
var hostEnv = []string{"PATH=/bin", "HOME=/root", "USER=u", "LANG=C", "LC_CTYPE=C.UTF-8", "TMPDIR=/tmp", "PWD=/w",
	"FOO=bar", "GITHUB_TOKEN=x", "DATABASE_URL=postgres://app:s3cret@db/app", "REDIS_URL=redis://:pw@cache",
	"MYSQL_PWD=p", "DB_PASS=p", "SMTP_PASS=p", "GPG_PASSPHRASE=p", "SENTRY_DSN=https://k@sentry.io/1", "OPENAI_KEY=k",
	"BASH_FUNC_f%%=() { :; }", "=weird"}

func TestChildEnvIsAnAllowList(t *testing.T) {
	got := conn.ChildEnv(hostEnv, []string{"GITHUB_TOKEN=passed-explicitly", "LANG=en"})
	want := []string{"PATH=/bin", "HOME=/root", "USER=u", "LANG=C", "LC_CTYPE=C.UTF-8", "TMPDIR=/tmp",
		"GITHUB_TOKEN=passed-explicitly", "LANG=en"}
	if runtime.GOOS == "windows" {
		want = []string{"PATH=/bin", "GITHUB_TOKEN=passed-explicitly", "LANG=en"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChildEnv (-want +got):\n%s", diff)
	}
}

func TestInheritedEnvDropsCredentials(t *testing.T) {
	got := conn.InheritedEnv(hostEnv, []string{"GITHUB_TOKEN=passed-explicitly", "LANG=en"})
	want := []string{"PATH=/bin", "HOME=/root", "USER=u", "LANG=C", "LC_CTYPE=C.UTF-8", "TMPDIR=/tmp", "PWD=/w",
		"FOO=bar", "GITHUB_TOKEN=passed-explicitly", "LANG=en"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InheritedEnv (-want +got):\n%s", diff)
	}
}

// closedNow reports whether c is closed.
func closedNow(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestRegistryChanged(t *testing.T) {
	r := conn.NewRegistry()
	ch := r.Changed()
	if closedNow(ch) {
		t.Fatal("Changed closed before any change")
	}
	un, err := r.Register(conn.Tool{Name: "mcp__a__x", Server: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if !closedNow(ch) {
		t.Error("Register did not close Changed")
	}
	ch = r.Changed()
	if _, err := r.Register(conn.Tool{Name: "mcp__a__x", Server: "b"}); err == nil || closedNow(ch) {
		t.Errorf("a refused registration: err %v, changed %v; want an error and no change", err, closedNow(ch))
	}
	uns, err := r.Replace([]conn.Tool{{Name: "mcp__a__x", Server: "a"}}, []conn.Tool{{Name: "mcp__a__y", Server: "a"}, {Name: "mcp__a__z", Server: "a"}})
	if err != nil || !closedNow(ch) {
		t.Fatalf("Replace: err %v, changed %v", err, closedNow(ch))
	}
	ch = r.Changed()
	un() // already replaced: no change
	if closedNow(ch) {
		t.Error("a stale unregister reported a change")
	}
	uns[0]()
	if !closedNow(ch) {
		t.Error("unregister did not close Changed")
	}
}

func TestRegistry(t *testing.T) {
	r := conn.NewRegistry()
	un, err := r.Register(conn.Tool{Name: "mcp__a__x", Server: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(conn.Tool{Name: "mcp__a__x", Server: "b"}); err == nil || !strings.Contains(err.Error(), `registered by server "a"`) {
		t.Errorf("conflict err = %v", err)
	}
	un()
	un() // idempotent
	un2, err := r.Register(conn.Tool{Name: "mcp__a__x", Server: "b"})
	if err != nil {
		t.Fatal(err)
	}
	un() // the old unregister must not remove the new registration
	if got := len(r.Tools()); got != 1 {
		t.Errorf("%d tools, want 1", got)
	}
	un2()
	if _, err := r.Call(t.Context(), "mcp__a__x", nil); err == nil {
		t.Error("call of an unregistered tool succeeded")
	}
}

func TestZeroToolRegistryIsUsable(t *testing.T) {
	var r conn.ToolRegistry
	ch := r.Changed()
	un, err := r.Register(conn.Tool{Name: "mcp__a__x", Server: "a"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Error("Changed not closed by a registration")
	}
	if _, ok := r.Lookup("mcp__a__x"); !ok {
		t.Error("Lookup after Register failed")
	}
	un()
	if got := r.Tools(); len(got) != 0 {
		t.Errorf("Tools after unregister = %v", got)
	}
	release, err := r.Reserve("a")
	if err != nil {
		t.Fatal(err)
	}
	release()
	release2, err := r.Reserve("a")
	if err != nil {
		t.Fatalf("Reserve after release: %v", err)
	}
	release() // a stale release must not free the new reservation
	if _, err := r.Reserve("a"); !errors.Is(err, conn.ErrDuplicateServer) {
		t.Errorf("Reserve while held = %v, want ErrDuplicateServer", err)
	}
	release2()
}

// TestSplitToolName: the server part of every public name is the server's
// name, whatever the tool's name holds; names of no server are refused.
func TestSplitToolName(t *testing.T) {
	for _, tc := range []struct{ server, raw string }{
		{"fs", "read"}, {"fs", "a__b"}, {"git-hub", "x.y"}, {"s", "tool_0123456789ab"},
	} {
		public := conn.PublicToolName(tc.server, tc.raw)
		server, tool, ok := conn.SplitToolName(public)
		if !ok || server != tc.server || public != "mcp__"+server+"__"+tool {
			t.Errorf("SplitToolName(%q) = %q, %q, %v; want server %q", public, server, tool, ok, tc.server)
		}
	}
	for _, bad := range []string{"", "read", "mcp__", "mcp__fs", "mcp____x", "mcp__fs__", "other__fs__read"} {
		if s, tool, ok := conn.SplitToolName(bad); ok {
			t.Errorf("SplitToolName(%q) = %q, %q, true; want false", bad, s, tool)
		}
	}
}
