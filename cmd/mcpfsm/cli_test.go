package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Every command's -h and --help print its help to stdout and exit 0, so
// that 'mcpfsm serve -h | less' shows it.
func TestHelpGoesToStdout(t *testing.T) {
	for _, cmd := range []string{"check", "tools", "call", "run", "serve", "demo", "status", "reconnect", "probe"} {
		for _, h := range []string{"-h", "--help"} {
			code, out, errOut := runCmd(t, cmd, h)
			if code != exitOK || !strings.Contains(out, "mcpfsm "+cmd) || !strings.Contains(out, "Flags:") || errOut != "" {
				t.Errorf("%s %s: exit %d, stdout %d bytes, stderr %q; want the help on stdout, exit 0", cmd, h, code, len(out), errOut)
			}
		}
	}
	for _, h := range []string{"-h", "--help", "help"} {
		if code, out, _ := runCmd(t, h); code != exitOK || !strings.Contains(out, "mcpfsm serve") {
			t.Errorf("mcpfsm %s: exit %d", h, code)
		}
	}
}

// A bad flag or argument prints its error, a hint and where help is: a
// few lines on stderr, exit 2, not the whole help.
func TestBadUsageIsShort(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-confg", "x.json"}, "did you mean -config?"},
		{[]string{"check", "--confg", "x.json"}, "did you mean -config?"},
		{[]string{"tools", "-config", "x.json", "-timeout", "10"}, "durations take a unit: 10s"},
		{[]string{"call", "-timeout", "ten", "x"}, "durations look like 10s"},
		{[]string{"check", "typo.json"}, "-config typo.json"},
		{[]string{"serv"}, "did you mean serve?"},
	} {
		code, out, errOut := runCmd(t, tt.args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if code != exitUsage || out != "" || len(lines) > 5 || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "-h' for usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr (%d lines):\n%s\nwant exit 2, at most 5 lines with %q and a pointer to -h", tt.args, code, out, len(lines), errOut, tt.want)
		}
	}
}

// version, -version and --version print the module version; it is
// also serve's serverInfo.version.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "-version", "--version"} {
		code, out, _ := runCmd(t, arg)
		if code != exitOK || !strings.HasPrefix(out, "mcpfsm "+version()+" (go") {
			t.Errorf("%s: exit %d, stdout %q", arg, code, out)
		}
	}
	if v := version(); v == "" || v == "dev" {
		t.Errorf("version() = %q, want the build's module version or devel", v)
	}
}

// probe -url takes the host's base URL and asks its /readyz.
func TestProbeBaseURL(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		fmt.Fprint(w, "ready")
	}))
	defer srv.Close()
	t.Setenv("MCPFSM_TOKEN", "9f2c4e7a1b8d3f6e0a5c9b2d7e4f1a8c")
	for _, url := range []string{srv.URL, srv.URL + "/", srv.URL + "/readyz", srv.URL + "/healthz"} {
		if code, _, errOut := runCmd(t, "probe", "-url", url); code != exitOK {
			t.Errorf("probe -url %s: exit %d, %s", url, code, errOut)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/readyz", "/readyz", "/readyz", "/healthz"}; !slices.Equal(paths, want) {
		t.Errorf("probe asked %q, want %q", paths, want)
	}
}
