package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/internal/servername"
	"github.com/mcpfsm/mcpfsm/internal/tree"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

// Format is the layout of a config file: the key its servers sit under.
type Format string

// The formats Parse reads. Their server entries share one set of keys.
const (
	// MCPServers is the "mcpServers" object of Claude Desktop
	// (claude_desktop_config.json), Claude Code (.mcp.json), Cursor
	// (.cursor/mcp.json), Gemini CLI (.gemini/settings.json) and Windsurf
	// (mcp_config.json).
	MCPServers Format = "mcpServers"
	// Servers is the "servers" object (and "inputs" array) of VS Code's
	// mcp.json, also mcpfsm's own layout.
	Servers Format = "servers"
	// MCPServersTOML is the "mcp_servers" table of Codex's config.toml:
	// one [mcp_servers.NAME] table a server.
	MCPServersTOML Format = "mcp_servers"
)

// Transport types of a [Server], the values of its "type" key.
const (
	TypeStdio = "stdio" // a child process speaking MCP on stdin and stdout
	TypeHTTP  = "http"  // a Streamable HTTP endpoint
	TypeSSE   = "sse"   // an HTTP+SSE endpoint of the 2024-11-05 protocol
)

// Config is a parsed, validated config file.
type Config struct {
	// Format is the layout the file used.
	Format Format
	// Servers in the order the file lists them; disabled ones and those
	// whose entry is invalid (Skipped) are left out.
	Servers []Server
	// Tools say how mcpfsm serve lists tools: the top-level
	// "toolList" block.
	Tools Tools
	// Skipped are the server entries left out because they are invalid,
	// in file order, each with its errors. Parse returns a Config with
	// Skipped only along with an error: see [Parse].
	Skipped []SkippedServer
	// Warnings are the keys that a known host uses but mcpfsm ignores,
	// and other harmless oddities, each naming its JSON path. They are not
	// errors: the file loads.
	Warnings []string
}

// SkippedServer is a server entry left out of a [Config] because it is
// invalid.
type SkippedServer struct {
	// Key is the entry's key in the file.
	Key string
	// Err holds every error of the entry, each naming its path.
	Err error
}

// Server is one entry of the file's server object. Type says which of
// Command (stdio) and URL (http, sse) is set.
type Server struct {
	// Name is the server's name: tools and prompts are published as
	// mcp__<Name>__<tool>, and conn, status and the console know it by
	// it. It is Key when Key is a valid name (conn.ValidName); otherwise
	// Key sanitized ("Brave Search" becomes "brave_search", "github.com"
	// "github_com"), with "_2", "_3", ... added if another entry has that
	// name. The same file always gives the same names.
	Name string
	// Key is the entry's key in the file when it is not Name (any string
	// a host accepts); empty when the key is the name.
	Key string
	// Type is TypeStdio, TypeHTTP or TypeSSE.
	Type string

	Command string   // stdio: the program to run
	Args    []string // stdio: its arguments
	// Env holds stdio's extra KEY=VALUE entries: those of EnvFile first,
	// then those of "env" in file order (a later entry wins).
	Env     []string
	EnvFile string // stdio: the env file Env was read from, if any
	Cwd     string // stdio: working directory; empty means mcpfsm's

	URL     string      // http, sse: the endpoint
	Headers http.Header // http, sse: sent with every request
	// OAuth is how mcpfsm signs in to an http server that asks for it
	// (the hosts' "oauth" or "auth" keys); nil when the entry has none.
	OAuth *OAuth
	// UpstreamAuth is mcpfsm's key upstreamAuth: "shared" (every caller
	// of a gateway reaches the server with the operator's credential),
	// "per-caller" (each OAuth caller with its own), or "" when the entry
	// does not say: per-caller on serve with -oauth-issuer, the
	// operator's otherwise.
	UpstreamAuth string
	// TokenExchange is upstreamAuth's {"tokenExchange": {...}}: each OAuth
	// caller's token is exchanged for the server's; nil when not given.
	TokenExchange *TokenExchange

	Reconnect          policy.Policy
	FailOnStartupError bool
	ConnectTimeout     time.Duration // zero: conn.DefaultConnectTimeout
	CallTimeout        time.Duration // zero: conn.DefaultCallTimeout
	CloseTimeout       time.Duration // zero: conn.DefaultCloseTimeout
	KeepAlive          time.Duration // zero: conn's default (pings for HTTP only)

	// IncludeTools and ExcludeTools filter the server's tools by their own
	// names, '*' matching any run of characters: see [Server.ToolAllowed].
	// Empty IncludeTools means every tool; ExcludeTools wins.
	IncludeTools []string
	ExcludeTools []string
	// MaxConcurrentCalls bounds the server's calls in flight at once;
	// zero means no bound.
	MaxConcurrentCalls int
	// MaxResultBytes bounds the size of one tool result that mcpfsm serve
	// passes whole: a larger one is cut, and kept whole for its caller as
	// a resource for a while. Zero means serve's -max-result-bytes.
	MaxResultBytes int

	// Isolation says how the clients of mcpfsm serve's HTTP front share
	// the server: IsolationPerClient (or "", the default) gives each its
	// own instance, IsolationShared one for all.
	Isolation string
	// MaxInstances bounds the server's per-client instances; zero means
	// serve's -max-sessions.
	MaxInstances int
	// Roots are the root URIs offered to the server's shared instance;
	// no client's roots reach a server that several clients share.
	Roots []string
	// AllowScopes, ToolScopes and RateLimit are the per-caller policy of
	// the server (see package authz; [Server.Rules], [Server.Limiter]):
	// a caller needs one of AllowScopes for anything of the server, and
	// one of each matching ToolScopes pattern's scopes for a tool or
	// prompt; each caller makes at most RateLimit calls. Nil and zero
	// mean no rule.
	AllowScopes []string
	ToolScopes  []authz.ToolScope
	RateLimit   authz.Rate
	// Sandbox, for a stdio server with "sandboxEnabled": true (or any
	// stdio server with Options.SandboxAll, unless it says false), is its
	// effective sandbox: the file's top-level "sandbox" block overridden
	// key by key by the server's own. Nil runs it unsandboxed.
	Sandbox *sandbox.Spec
}

// Options tune how a file is read. The zero value reads the process
// environment and resolves relative paths against the working directory.
type Options struct {
	// LookupEnv resolves ${VAR}, ${VAR:-default} and ${env:VAR}. Nil
	// means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Dir is the directory a relative envFile path is read from. Empty
	// means the working directory; Load uses the file's directory.
	Dir string
	// WorkspaceFolder is what ${workspaceFolder} expands to. Empty means
	// the working directory; Load uses the parent of a ".vscode"
	// directory holding the file, as VS Code would, and else the file's
	// directory.
	WorkspaceFolder string
	// SandboxAll sandboxes every stdio server that does not say
	// "sandboxEnabled": false, as its "sandbox" blocks say (mcpfsm serve
	// -sandbox-all).
	SandboxAll bool

	// file is the config file Load read, which no sandbox may write.
	file string
}

// Lookup returns the server called name, by its Name or else its Key.
func (c *Config) Lookup(name string) (Server, bool) {
	for _, s := range c.Servers {
		if s.Name == name {
			return s, true
		}
	}
	for _, s := range c.Servers {
		if s.Key != "" && s.Key == name {
			return s, true
		}
	}
	return Server{}, false
}

// Load reads and parses the config file at path, with the file's
// directory as Options.Dir and, as Options.WorkspaceFolder, the parent of
// a ".vscode" directory holding the file, else the file's directory,
// unless o sets them. A
// file named *.toml is read as Codex's config.toml, and a file named
// settings.json as Gemini CLI's (see the package documentation); others
// as [Parse] reads them. Its errors are those of [Parse], prefixed with
// the file name; like Parse, it may return a Config along with them.
func Load(path string, o *Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	dir := filepath.Dir(path)
	if opts.Dir == "" {
		opts.Dir = dir
	}
	if opts.WorkspaceFolder == "" {
		ws := dir
		if filepath.Base(dir) == ".vscode" {
			ws = filepath.Dir(dir)
		}
		if abs, err := filepath.Abs(ws); err == nil {
			opts.WorkspaceFolder = abs
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		opts.file = abs
	}
	h := sniff(data)
	h.toml = h.toml || strings.EqualFold(filepath.Ext(path), ".toml")
	h.gemini = filepath.Base(path) == "settings.json"
	cfg, err := parse(data, &opts, h)
	if err != nil {
		return cfg, fmt.Errorf("%s: invalid config:\n%w", path, err)
	}
	return cfg, nil
}

// Parse parses a config file in any [Format]. A file whose first line is
// a TOML table header, a key = value or a # comment is read as Codex's
// config.toml; any other as JSON, which may hold comments and trailing
// commas (JSONC). String values of command, args, env, envFile, cwd, url
// and headers in a JSON file have their variables substituted (see the
// package documentation); Codex substitutes none, and neither does Parse
// in its files.
//
// Parse rejects unknown keys (suggesting the key meant), duplicate keys,
// values of the wrong type, servers with both or neither of "command" and
// "url", a "type" that contradicts them, unset variables and anything
// after the top object. Every problem it finds is reported, joined with
// errors.Join, one per line, each naming its path and, for malformed
// JSON, its line and column. Any key a host accepts names a server (see
// [Server.Name] for the name mcpfsm gives it).
//
// A file with some invalid server entries and at least one valid one
// (and no error outside its entries) gives both: the Config of the valid
// servers, with the invalid ones in Config.Skipped, and the error of
// every skipped entry. A caller that runs what it can (mcpfsm serve and
// run) serves that Config and shows the error; one that wants the whole
// file (a reload) treats any error as failure. Otherwise, when the error
// is not nil, the Config is nil.
// Keys that another host uses and mcpfsm ignores are not errors but
// Config.Warnings.
//
// A JSON null for an option means the option is omitted.
func Parse(data []byte, o *Options) (*Config, error) {
	return parse(data, o, sniff(data))
}

// hint is what is known of a file's host before its servers are read.
type hint struct {
	toml   bool // Codex's config.toml
	gemini bool // Gemini CLI's settings.json
}

func parse(data []byte, o *Options, h hint) (*Config, error) {
	p := &parser{unsandboxed: map[string]bool{}, serverBlocks: map[string]*sandboxBlock{}}
	if o != nil {
		p.opts = *o
	}
	if p.opts.LookupEnv == nil {
		p.opts.LookupEnv = os.LookupEnv
	}
	if h.toml {
		p.d = &codexDialect
		return p.parseTOML(data)
	}
	plain, err := stripJSONC(data)
	if err != nil {
		return nil, err
	}
	doc, err := single(plain)
	if err != nil {
		return nil, err
	}
	top, ok := p.object(doc, "config")
	if !ok {
		return nil, p.err()
	}
	p.d = &hostDialect
	if h.gemini || isGemini(top) {
		p.d = &geminiDialect
	}
	cfg := &Config{}
	var servers tree.Value
	var serversKey string
	for _, m := range top {
		switch m.Key {
		case string(MCPServers), string(Servers):
			if serversKey != "" {
				p.addf("config has both %q and %q: list every server under one of them", serversKey, m.Key)
				continue
			}
			servers, serversKey = m.Value, m.Key
		case "inputs":
			p.warnf(`inputs is ignored: mcpfsm does not prompt for input variables, so a ${input:...} reference is an error; use ${env:NAME} instead`)
		default:
			p.d.setting(p, m)
		}
	}
	switch len(p.settings) {
	case 0:
	case 1:
		p.warnf("%s is ignored: it is a Gemini CLI setting, not a server", p.settings[0])
	default:
		p.warnf("%s are ignored: they are Gemini CLI settings, not servers", strings.Join(p.settings, ", "))
	}
	if serversKey == "" {
		if len(p.errs) == 0 {
			p.addf(`config must have a "mcpServers" (Claude Desktop, Claude Code, Cursor, Gemini CLI, Windsurf) or "servers" (VS Code) object naming at least one server`)
		}
		return nil, p.err()
	}
	cfg.Format = Format(serversKey)
	if servers.Kind == tree.Null {
		p.addf("%s must be an object naming at least one server, not null", serversKey)
		return nil, p.err()
	}
	members, ok := p.object(servers, serversKey)
	if ok && len(members) == 0 {
		p.addf("%s is empty: name at least one server", serversKey)
	}
	for _, m := range members {
		before := len(p.errs)
		s, ok := p.server(serversKey, m.Key, m.Value)
		p.take(cfg, m.Key, s, ok && p.geminiAllows(serversKey, m.Key), before)
	}
	return p.finish(cfg, serversKey)
}

// take ends the entry of server key, whose errors are those after before
// in p.errs: one with errors is skipped (Config.Skipped), a valid one
// (ok: not disabled) added to cfg.
func (p *parser) take(cfg *Config, key string, s Server, ok bool, before int) {
	p.keys = append(p.keys, key)
	if n := len(p.errs) - before; n > 0 {
		p.skipped = append(p.skipped, SkippedServer{Key: key, Err: errors.Join(p.errs[before:]...)})
		p.entryErrs += n
		return
	}
	if ok {
		cfg.Servers = append(cfg.Servers, s)
	}
}

// finish returns cfg, or the errors found: with cfg when they are all
// errors of skipped entries and a server is left (see Parse).
func (p *parser) finish(cfg *Config, serversKey string) (*Config, error) {
	err := p.err()
	if len(p.errs) > p.entryErrs {
		return nil, err // an error outside the server entries
	}
	if len(cfg.Servers) == 0 {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: every server is disabled: enable at least one", serversKey)
	}
	p.sandboxAll(cfg)
	names := map[string]string{}
	for i, name := range servername.Unique(p.keys) {
		names[p.keys[i]] = name
	}
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		if s.Name = names[s.Key]; s.Name == s.Key {
			s.Key = ""
		}
	}
	cfg.Tools = p.tools
	p.protect(cfg)
	cfg.Warnings, cfg.Skipped = p.warnings, p.skipped
	return cfg, err
}

// topKeys are the top-level keys Parse reads.
var topKeys = []string{string(MCPServers), string(Servers), "inputs", "sandbox", "toolList"}

// topIgnored are top-level keys of known hosts' files that hold no
// servers: a warning, not an error.
var topIgnored = map[string]string{
	"globalShortcut": "Claude Desktop",
	"preferences":    "Claude Desktop",
}

// hostSetting reads a top-level key of a JSON host's file: the "sandbox"
// block, or another host's setting.
func hostSetting(p *parser, m member) {
	if m.Key == "sandbox" {
		p.topSandbox = p.sandboxBlock(m.Value, "sandbox")
		return
	}
	if m.Key == "toolList" {
		p.tools = p.toolsBlock(m.Value, "toolList")
		return
	}
	if host, ok := topIgnored[m.Key]; ok {
		p.warnf("%s is ignored: it is a %s setting, not a server", pathKey("", m.Key), host)
		return
	}
	p.addf("%s is not a config key (%s)", pathKey("", m.Key), suggest(m.Key, topKeys))
}

// single returns the one JSON value of data, rejecting malformed JSON and
// trailing data.
func single(data []byte) (tree.Value, error) {
	v, err := tree.ParseJSON(data)
	var se *json.SyntaxError
	var trailing *tree.TrailingError
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, tree.ErrEmpty):
		return v, errors.New("config is empty: it must be a JSON object")
	case errors.As(err, &trailing):
		line, col := position(data, trailing.Offset)
		return v, fmt.Errorf("config has data after its top-level object (line %d, column %d)", line, col)
	case errors.As(err, &se):
		line, col := position(data, int(se.Offset)-1) // Offset is just past the bad byte
		return v, fmt.Errorf("config is not valid JSON: line %d, column %d: %v", line, col, se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(data, len(bytes.TrimRight(data, " \t\r\n")))
		return v, fmt.Errorf("config is not valid JSON: line %d, column %d: unexpected end of input: close every object, array and string", line, col)
	}
	return v, fmt.Errorf("config is not valid JSON: %v", err)
}

// position returns the 1-based line and column of byte offset off.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
