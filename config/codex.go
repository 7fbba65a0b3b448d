package config

import (
	"net/http"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// Codex's defaults, which a Codex entry keeps unless it sets its own:
// the user wrote the file for Codex and expects its behaviour.
const (
	CodexStartupTimeout = 10 * time.Second // startup_timeout_sec
	CodexToolTimeout    = 60 * time.Second // tool_timeout_sec
)

// codexDialect reads the [mcp_servers.NAME] tables of Codex's
// config.toml: Codex's keys, its timeouts in seconds and its defaults,
// mcpfsm's extensions that Codex has no key for, and no variables.
var codexDialect = dialect{
	fields: codexFields, keys: codexKeys, ignored: codexIgnored, host: "Codex", spelling: codexSpelling,
	vars: noVars, base: Server{ConnectTimeout: CodexStartupTimeout, CallTimeout: CodexToolTimeout},
	settle: codexHeaders, disabledBy: "enabled = false",
}

// codexKeys are the options of one Codex server that Parse reads, in
// documentation order, then mcpfsm's extensions that Codex has no key for.
var codexKeys = []string{
	"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers", "env_http_headers",
	"startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled", "required", "enabled_tools", "disabled_tools",
	"reconnect", "closeTimeoutMs", "keepAliveMs", "maxConcurrentCalls",
}

// codexFields are the server keys of a Codex table.
var codexFields = map[string]setter{
	"command":              command,
	"args":                 args,
	"env":                  codexEnv,
	"env_vars":             forwardEnv,
	"cwd":                  cwd,
	"url":                  endpoint,
	"http_headers":         staticHeaders,
	"env_http_headers":     envHeaders,
	"bearer_token_env_var": bearerTokenVar,
	"bearer_token":         bearerToken,
	"startup_timeout_sec":  sec(connectTimeout),
	"startup_timeout_ms":   startupTimeoutMs,
	"tool_timeout_sec":     sec(callTimeout),
	"enabled":              enabled,
	"required":             failOnStartupError,
	"enabled_tools":        includeTools,
	"disabled_tools":       excludeTools,
	// mcpfsm's extensions that Codex has no key for.
	"reconnect":          reconnect,
	"closeTimeoutMs":     ms(closeTimeout, 1),
	"keepAliveMs":        ms(keepAlive, 0),
	"maxConcurrentCalls": maxConcurrentCalls,
}

// codexEnv is Codex's "env": in file order with env_vars.
func codexEnv(p *parser, e *entry, m member, path string) {
	e.s.Env = append(e.s.Env, p.env(m.Value, path)...)
}

func staticHeaders(p *parser, e *entry, m member, path string) { e.static = p.headers(m.Value, path) }

func bearerTokenVar(p *parser, e *entry, m member, path string) { e.bearer = &m }

func bearerToken(p *parser, e *entry, m member, path string) {
	p.addf("%s is not supported (Codex rejects it too): put the token in an environment variable and name that variable in bearer_token_env_var", path)
}

// startupTimeoutMs is Codex's older spelling of startup_timeout_sec.
func startupTimeoutMs(p *parser, e *entry, m member, path string) {
	if e.has["startup_timeout_sec"] {
		p.warnf("%s has no effect: startup_timeout_sec is given; remove one", path)
		return
	}
	ms(connectTimeout, 1)(p, e, m, path)
}

func enabled(p *parser, e *entry, m member, path string) { e.disabled = !p.boolean(m.Value, path) }

// codexIgnored are Codex's server keys that mcpfsm does not use.
var codexIgnored = map[string]string{
	"experimental_environment": "Codex", "supports_parallel_tool_calls": "Codex", "default_tools_approval_mode": "Codex",
	"scopes": "Codex", "oauth_resource": "Codex", "name": "Codex", "tools": "Codex",
}

// codexSpelling maps mcpfsm's JSON keys to the Codex keys that say the
// same: in a Codex file the Codex key is the one to give.
var codexSpelling = map[string]string{
	"connectTimeoutMs":   "startup_timeout_sec",
	"callTimeoutMs":      "tool_timeout_sec",
	"failOnStartupError": "required",
	"includeTools":       "enabled_tools",
	"excludeTools":       "disabled_tools",
	"headers":            "http_headers",
	"disabled":           "enabled",
}

// codexHeaders assembles an http server's headers as Codex does: the
// static ones, those read from the environment over them, and the bearer
// token over both.
func codexHeaders(p *parser, e *entry) {
	if e.s.Type != TypeHTTP {
		return
	}
	h := http.Header{}
	for k, v := range e.static {
		h[k] = v
	}
	for k, v := range e.fromEnv {
		h[k] = v
	}
	if e.bearer != nil {
		path := pathKey(e.path, e.bearer.Key)
		if token, ok := p.envValue(e.bearer.Value, path, "the server's bearer token"); ok {
			h.Set("Authorization", "Bearer "+token)
		}
	}
	if len(h) > 0 {
		e.s.Headers = h
	}
}

// envValue reads the environment variable named by the string v. Unset
// or empty, it is an error: the server would only refuse mcpfsm. The
// value never appears in an error.
func (p *parser) envValue(v tree.Value, path, what string) (string, bool) {
	name, ok := p.str(v, path)
	if !ok {
		return "", false
	}
	if !envName(name) {
		p.addf("%s: %q is not an environment variable name", path, name)
		return "", false
	}
	val, set := p.opts.LookupEnv(name)
	switch {
	case !set:
		p.addf("%s: environment variable %s is not set: set it to %s", path, name, what)
		return "", false
	case val == "":
		p.addf("%s: environment variable %s is empty: set it to %s", path, name, what)
		return "", false
	case strings.ContainsAny(val, "\r\n"):
		p.addf("%s: environment variable %s holds a line break, which no HTTP header may", path, name)
		return "", false
	}
	return val, true
}

// envHeaders reads Codex's env_http_headers: header names mapped to the
// environment variables holding their values. A variable unset or empty
// sends no header, as in Codex, with a warning.
func envHeaders(p *parser, e *entry, m member, path string) {
	members, ok := p.object(m.Value, path)
	if !ok {
		return
	}
	h := http.Header{}
	e.fromEnv = h
	for _, m := range members {
		kpath := pathKey(path, m.Key)
		if !headerName(m.Key) {
			p.addf("%s is not a valid HTTP header name", kpath)
			continue
		}
		name, ok := p.str(m.Value, kpath)
		if !ok {
			continue
		}
		if !envName(name) {
			p.addf("%s: %q is not an environment variable name", kpath, name)
			continue
		}
		switch val, _ := p.opts.LookupEnv(name); {
		case val == "":
			p.warnf("%s: environment variable %s is not set: the header is not sent", kpath, name)
		case strings.ContainsAny(val, "\r\n"):
			p.addf("%s: environment variable %s holds a line break, which no HTTP header may", kpath, name)
		default:
			h.Set(m.Key, val)
		}
	}
}

// forwardEnv reads Codex's env_vars: the names of mcpfsm's environment
// variables to pass to the server. An unset one is skipped, with a
// warning.
func forwardEnv(p *parser, e *entry, m member, path string) {
	for i, name := range p.stringArray(m.Value, path) {
		epath := tree.Index(path, i)
		if !envName(name) {
			p.addf("%s: %q is not an environment variable name", epath, name)
			continue
		}
		if val, ok := p.opts.LookupEnv(name); ok {
			e.s.Env = append(e.s.Env, name+"="+val)
		} else {
			p.warnf("%s: environment variable %s is not set: not passed to the server", epath, name)
		}
	}
}
