package config

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/policy"
)

// Codex's defaults, which a Codex entry keeps unless it sets its own:
// the user wrote the file for Codex and expects its behaviour.
const (
	CodexStartupTimeout = 10 * time.Second // startup_timeout_sec
	CodexToolTimeout    = 60 * time.Second // tool_timeout_sec
)

// codexKeys are the options of one Codex server that Parse reads, in
// documentation order, then mcpfsm's extensions that Codex has no key for.
var codexKeys = []string{
	"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers", "env_http_headers",
	"startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled", "required", "enabled_tools", "disabled_tools",
	"reconnect", "closeTimeoutMs", "keepAliveMs", "maxConcurrentCalls",
}

// codexIgnored are Codex's server keys that mcpfsm does not use.
var codexIgnored = []string{
	"experimental_environment", "supports_parallel_tool_calls", "default_tools_approval_mode",
	"scopes", "oauth_resource", "name", "tools",
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

// codexServer parses the [mcp_servers.NAME] table at path, as JSON.
func (p *parser) codexServer(path, name string, raw json.RawMessage) (Server, bool) {
	before := len(p.errs)
	s := Server{Name: name, Reconnect: policy.Default(), ConnectTimeout: CodexStartupTimeout, CallTimeout: CodexToolTimeout}
	if err := checkName(name); err != nil {
		p.addf("%s: %v", path, err)
	}
	members, ok := p.object(raw, path)
	if !ok {
		return s, false
	}
	given, has := map[string]bool{}, map[string]bool{}
	for _, m := range members {
		has[m.key] = true
	}
	enabled := true
	var static, fromEnv http.Header
	var bearer member
	for _, m := range members {
		fpath := pathKey(path, m.key)
		given[m.key] = true
		switch m.key {
		case "command":
			s.Command = p.nonEmptyString(m.val, fpath, "a program name or path")
		case "args":
			s.Args = p.stringArray(m.val, fpath)
		case "env":
			s.Env = append(s.Env, p.env(m.val, fpath)...)
		case "env_vars":
			s.Env = append(s.Env, p.forwardEnv(m.val, fpath)...)
		case "cwd":
			s.Cwd = p.nonEmptyString(m.val, fpath, "a directory (omit it to use mcpfsm's working directory)")
		case "url":
			s.URL = p.url(m.val, fpath)
		case "http_headers":
			static = p.headers(m.val, fpath)
		case "env_http_headers":
			fromEnv = p.envHeaders(m.val, fpath)
		case "bearer_token_env_var":
			bearer = m
		case "bearer_token":
			p.addf("%s is not supported (Codex rejects it too): put the token in an environment variable and name that variable in bearer_token_env_var", fpath)
		case "startup_timeout_sec":
			s.ConnectTimeout = p.seconds(m.val, fpath)
		case "startup_timeout_ms":
			if has["startup_timeout_sec"] {
				p.warnf("%s has no effect: startup_timeout_sec is given; remove one", fpath)
				continue
			}
			s.ConnectTimeout = p.millis(m.val, fpath, 1)
		case "tool_timeout_sec":
			s.CallTimeout = p.seconds(m.val, fpath)
		case "enabled":
			enabled = p.boolean(m.val, fpath)
		case "required":
			s.FailOnStartupError = p.boolean(m.val, fpath)
		case "enabled_tools":
			s.IncludeTools = p.toolList(m.val, fpath)
		case "disabled_tools":
			s.ExcludeTools = p.toolList(m.val, fpath)
		case "reconnect", "closeTimeoutMs", "keepAliveMs", "maxConcurrentCalls":
			p.extension(&s, m, fpath, has)
		default:
			if k, ok := codexSpelling[m.key]; ok {
				p.addf("%s is not a Codex server option: in a Codex file give %s", fpath, k)
			} else if slices.Contains(codexIgnored, m.key) {
				p.warnf("%s is ignored: mcpfsm does not use it (a key of Codex)", fpath)
			} else {
				p.addf("%s is not a server option (%s)", fpath, suggest(m.key, codexKeys))
			}
		}
	}
	p.checkType(path, &s, given)
	if s.Type == TypeHTTP {
		s.Headers = p.codexHeaders(static, fromEnv, bearer, pathKey(path, bearer.key))
	}
	if !enabled {
		p.warnf("%s is disabled (enabled = false): not started", path)
		return s, false
	}
	return s, len(p.errs) == before
}

// codexHeaders assembles an http server's headers as Codex does: the
// static ones, those read from the environment over them, and the bearer
// token over both.
func (p *parser) codexHeaders(static, fromEnv http.Header, bearer member, path string) http.Header {
	h := http.Header{}
	for k, v := range static {
		h[k] = v
	}
	for k, v := range fromEnv {
		h[k] = v
	}
	if bearer.key != "" {
		if token, ok := p.envValue(bearer.val, path, "the server's bearer token"); ok {
			h.Set("Authorization", "Bearer "+token)
		}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// envValue reads the environment variable named by the string raw. Unset
// or empty, it is an error: the server would only refuse mcpfsm. The
// value never appears in an error.
func (p *parser) envValue(raw json.RawMessage, path, what string) (string, bool) {
	name, ok := p.str(raw, path)
	if !ok {
		return "", false
	}
	if !envName(name) {
		p.addf("%s: %q is not an environment variable name", path, name)
		return "", false
	}
	v, set := p.opts.LookupEnv(name)
	switch {
	case !set:
		p.addf("%s: environment variable %s is not set: set it to %s", path, name, what)
		return "", false
	case v == "":
		p.addf("%s: environment variable %s is empty: set it to %s", path, name, what)
		return "", false
	case strings.ContainsAny(v, "\r\n"):
		p.addf("%s: environment variable %s holds a line break, which no HTTP header may", path, name)
		return "", false
	}
	return v, true
}

// envHeaders parses Codex's env_http_headers: header names mapped to the
// environment variables holding their values. A variable unset or empty
// sends no header, as in Codex, with a warning.
func (p *parser) envHeaders(raw json.RawMessage, path string) http.Header {
	members, ok := p.object(raw, path)
	if !ok {
		return nil
	}
	h := http.Header{}
	for _, m := range members {
		kpath := pathKey(path, m.key)
		if !headerName(m.key) {
			p.addf("%s is not a valid HTTP header name", kpath)
			continue
		}
		name, ok := p.str(m.val, kpath)
		if !ok {
			continue
		}
		if !envName(name) {
			p.addf("%s: %q is not an environment variable name", kpath, name)
			continue
		}
		switch v, _ := p.opts.LookupEnv(name); {
		case v == "":
			p.warnf("%s: environment variable %s is not set: the header is not sent", kpath, name)
		case strings.ContainsAny(v, "\r\n"):
			p.addf("%s: environment variable %s holds a line break, which no HTTP header may", kpath, name)
		default:
			h.Set(m.key, v)
		}
	}
	return h
}

// forwardEnv parses Codex's env_vars: the names of mcpfsm's environment
// variables to pass to the server. An unset one is skipped, with a
// warning.
func (p *parser) forwardEnv(raw json.RawMessage, path string) []string {
	names := p.stringArray(raw, path)
	var out []string
	for i, name := range names {
		epath := fmt.Sprintf("%s[%d]", path, i)
		if !envName(name) {
			p.addf("%s: %q is not an environment variable name", epath, name)
			continue
		}
		if v, ok := p.opts.LookupEnv(name); ok {
			out = append(out, name+"="+v)
		} else {
			p.warnf("%s: environment variable %s is not set: not passed to the server", epath, name)
		}
	}
	return out
}

// seconds parses a positive number of seconds, as Codex's timeouts are.
func (p *parser) seconds(raw json.RawMessage, path string) time.Duration {
	const limit = maxMs / 1000
	if k := kind(raw); k != "number" {
		p.addf("%s must be a number of seconds, not %s", path, article(k))
		return 0
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f <= 0 || f > limit {
		p.addf("%s must be a positive number of seconds, at most %d", path, limit)
		return 0
	}
	return time.Duration(f * float64(time.Second)).Round(time.Millisecond)
}
