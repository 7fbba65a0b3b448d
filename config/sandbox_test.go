package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// TestVSCodeSandbox loads a VS Code mcp.json with "sandboxEnabled" and a
// top-level "sandbox" as written, and checks each server's effective
// sandbox: the top block overridden key by key, the paths expanded.
func TestVSCodeSandbox(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	ws := mustAbs(t, "testdata/vscode-sandbox")
	top := sandbox.Spec{AllowWrite: []string{ws + "/out"}, DenyRead: []string{home + "/.ssh", "/srv/secrets"},
		AllowedDomains: []string{"registry.npmjs.org", "*.github.com"}, DeniedDomains: []string{"evil.github.com"},
		// The config file is never writable, whatever allowWrite says.
		Protect: []string{ws + "/.vscode/mcp.json"}}
	fs := top
	fs.AllowWrite = []string{ws, ws + "/.vscode/tmp"}
	fs.AllowedDomains = []string{}
	fs.AllowAllUnixSockets = true
	fs.MemoryMB, fs.MaxFiles = 512, 256
	for _, c := range []struct {
		all  bool
		want map[string]*sandbox.Spec
	}{
		{false, map[string]*sandbox.Spec{"filesystem": &fs, "memory": &top, "git": nil, "time": nil}},
		// -sandbox-all: every stdio server but the one that says false.
		{true, map[string]*sandbox.Spec{"filesystem": &fs, "memory": &top, "git": nil, "time": &top}},
	} {
		cfg, err := Load("testdata/vscode-sandbox/.vscode/mcp.json", &Options{LookupEnv: env("SECRETS_DIR", "/srv/secrets"), SandboxAll: c.all})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*sandbox.Spec{}
		for _, s := range cfg.Servers {
			got[s.Name] = s.Sandbox
			// A sandboxed server without "cwd" runs in its workspace,
			// not in mcpfsm's working directory.
			if s.Sandbox != nil && s.Cwd != ws {
				t.Errorf("server %s: Cwd = %q, want the workspace %s", s.Name, s.Cwd, ws)
			}
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("sandboxes with SandboxAll %v (-want +got):\n%s", c.all, diff)
		}
		if len(cfg.Warnings) != 0 {
			t.Errorf("warnings: %q", cfg.Warnings)
		}
	}
}

// TestSandboxProtectsEnvFiles checks that every server's env file is in
// every sandbox's Protect: a sandboxed server that could write one would
// set the environment (LD_PRELOAD, NODE_OPTIONS) of an unsandboxed one.
func TestSandboxProtectsEnvFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plain.env"), []byte("A=1\n"), 0o600)
	file := filepath.Join(dir, "mcp.json")
	os.WriteFile(file, []byte(`{"servers": {
		"boxed": {"command": "x", "sandboxEnabled": true},
		"plain": {"command": "y", "envFile": "plain.env"}}}`), 0o600)
	cfg, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cfg.Lookup("boxed")
	want := []string{file, filepath.Join(dir, "plain.env")}
	if s.Sandbox == nil || !cmp.Equal(s.Sandbox.Protect, want) {
		t.Errorf("Protect = %v, want %v", s.Sandbox, want)
	}
	if s.Cwd != dir {
		t.Errorf("Cwd = %q, want the config's directory %s", s.Cwd, dir)
	}
	if p, _ := cfg.Lookup("plain"); p.Cwd != "" {
		t.Errorf("an unsandboxed server's Cwd = %q, want mcpfsm's (empty)", p.Cwd)
	}
}

func TestSandboxErrors(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       []string
	}{
		{"http server", `{"servers": {"a": {"url": "https://x/mcp", "sandboxEnabled": true}}}`,
			[]string{`servers.a: "sandboxEnabled" and "sandbox" only apply to "command" servers`}},
		{"unknown keys", `{"sandbox": {"filesystem": {"allowWrites": []}, "net": {}}, "servers": {"a": {"command": "x", "sandboxEnabled": true}}}`,
			[]string{"sandbox.filesystem.allowWrites is not a key of sandbox.filesystem (did you mean allowWrite?)",
				"sandbox.net is not a sandbox key (known keys: filesystem, network, limits)"}},
		{"bad values", `{"servers": {"a": {"command": "x", "sandboxEnabled": "yes", "sandbox": {"network": {"allowedDomains": ["https://x.com", "*"]}, "limits": {"memoryMB": 0, "maxProcs": 1.5}, "filesystem": {"denyRead": ["", "~bob/x", 3]}}}}}`,
			[]string{"servers.a.sandboxEnabled must be true or false, not a string",
				"servers.a.sandbox.network.allowedDomains[0]: \"https://x.com\" is not a domain",
				"servers.a.sandbox.network.allowedDomains[1]: \"*\" would allow every host",
				"servers.a.sandbox.limits.memoryMB must be a positive integer",
				"servers.a.sandbox.limits.maxProcs must be a positive integer",
				"servers.a.sandbox.filesystem.denyRead[0] must not be empty",
				"servers.a.sandbox.filesystem.denyRead[1]: \"~bob/x\": only ~ (your home) is expanded",
				"servers.a.sandbox.filesystem.denyRead[2] must be a string, not a number"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.json), nil)
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the errors do not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestSandboxWarnings(t *testing.T) {
	cfg, err := Parse([]byte(`{"servers": {"a": {"command": "x", "sandbox": {"network": {"allowLocalBinding": true, "allowUnixSockets": ["/x.sock"]}, "ignoreViolations": {}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"servers.a.sandbox.network.allowLocalBinding is ignored: a sandbox of mcpfsm reaches the network only through its proxy, by allowedDomains (a key of sandbox-runtime)",
		`servers.a.sandbox.network.allowUnixSockets is ignored: on Linux a sandbox cannot allow some Unix sockets by path (as in sandbox-runtime): set "allowAllUnixSockets": true to allow them all`,
		"servers.a.sandbox.ignoreViolations is ignored: mcpfsm reports what the sandbox refused and does not weaken it (a key of sandbox-runtime)",
		`servers.a.sandbox has no effect: the server runs unsandboxed without "sandboxEnabled": true`,
	}
	if diff := cmp.Diff(want, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if cfg.Servers[0].Sandbox != nil {
		t.Errorf("a server without sandboxEnabled got a sandbox: %+v", cfg.Servers[0].Sandbox)
	}
	// With SandboxAll, the same server runs in its own block, silently.
	cfg, err = Parse([]byte(`{"servers": {"a": {"command": "x", "sandbox": {"filesystem": {"allowWrite": ["/w"]}}}}}`), &Options{SandboxAll: true})
	if err != nil {
		t.Fatal(err)
	}
	if sb := cfg.Servers[0].Sandbox; sb == nil || len(sb.AllowWrite) != 1 || sb.AllowWrite[0] != "/w" || len(cfg.Warnings) != 0 {
		t.Errorf("SandboxAll: sandbox %+v, warnings %q", sb, cfg.Warnings)
	}
}

// TestWorkspaceFolderDefault: ${workspaceFolder} is the config file's
// directory, or the parent of its .vscode directory, unless given.
func TestWorkspaceFolderDefault(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".vscode"), 0o755)
	body := []byte(`{"servers": {"a": {"command": "x", "args": ["${workspaceFolder}"]}}}`)
	for file, want := range map[string]string{"mcp.json": dir, ".vscode/mcp.json": dir} {
		path := filepath.Join(dir, file)
		os.WriteFile(path, body, 0o644)
		cfg, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Servers[0].Args[0]; got != want {
			t.Errorf("%s: ${workspaceFolder} = %q, want %q", file, got, want)
		}
		cfg, err = Load(path, &Options{WorkspaceFolder: "/given"})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Servers[0].Args[0]; got != "/given" {
			t.Errorf("%s with WorkspaceFolder: ${workspaceFolder} = %q", file, got)
		}
	}
}

// TestGeminiSandboxIsGeminis: in a Gemini CLI settings.json, "sandbox" is
// Gemini's own setting (its tool sandbox), ignored like its others.
func TestGeminiSandboxIsGeminis(t *testing.T) {
	cfg, err := Parse([]byte(`{"ui": {}, "sandbox": "docker", "mcpServers": {"a": {"command": "x"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers[0].Sandbox != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "sandbox") {
		t.Errorf("sandbox %+v, warnings %q", cfg.Servers[0].Sandbox, cfg.Warnings)
	}
}
