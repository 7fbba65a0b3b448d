package config

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/policy"
)

// serverKeys are the options of one server, in documentation order: the
// hosts' keys, then mcpfsm's extensions.
var serverKeys = []string{
	"type", "command", "args", "env", "envFile", "cwd", "url", "httpUrl", "serverUrl", "headers",
	"reconnect", "failOnStartupError", "connectTimeoutMs", "callTimeoutMs", "closeTimeoutMs", "keepAliveMs",
	"includeTools", "excludeTools", "maxConcurrentCalls", "isolation", "maxInstances", "roots",
	"allowScopes", "toolScopes", "rateLimit",
}

// otherKeys are server keys read but not listed in suggestions: the
// hosts' spellings of options serverKeys already has.
var otherKeys = []string{"disabled", "disabledTools", "timeout", "trust", "tcp", "sandboxEnabled", "sandbox"}

// stdioOnly are the options only a stdio server may have; httpOnly those
// only an http or sse server may have. Codex's keys are among them.
var (
	stdioOnly = []string{"args", "env", "envFile", "cwd", "env_vars"}
	httpOnly  = []string{"headers", "http_headers", "env_http_headers", "bearer_token_env_var"}
)

// urlKeys are the hosts' keys for an endpoint, with the type each implies
// ("" for the file's default: http, or sse in a Gemini CLI file).
var urlKeys = map[string]string{"url": "", "httpUrl": TypeHTTP, "serverUrl": TypeHTTP}

// ignoredKeys are server keys of other hosts that mcpfsm does not use,
// with the host that uses them: a warning, not an error. "disabled" is
// read: a disabled server is left out.
var ignoredKeys = map[string]string{
	"alwaysAllow":    "Cline",
	"autoApprove":    "Cline",
	"networkTimeout": "Cline",
	"description":    "several hosts",
	"dev":            "VS Code",
	"gallery":        "VS Code",
	"version":        "VS Code",
	"oauth":          "Claude Code, Gemini CLI",
	"auth":           "Cursor",

	"authProviderType":     "Gemini CLI",
	"targetAudience":       "Gemini CLI",
	"targetServiceAccount": "Gemini CLI",
	"extensionName":        "Gemini CLI",
}

// typeAliases maps the "type" values hosts use to mcpfsm's.
var typeAliases = map[string]string{
	TypeStdio: TypeStdio, TypeHTTP: TypeHTTP, TypeSSE: TypeSSE,
	"streamable-http": TypeHTTP, "streamableHttp": TypeHTTP,
}

// server parses the entry of server name under the servers object key.
func (p *parser) server(key, name string, raw json.RawMessage) (Server, bool) {
	path := pathKey(key, name)
	before := len(p.errs)
	s := Server{Name: name, Reconnect: policy.Default()}
	if err := checkName(name); err != nil {
		p.addf("%s: %v", path, err)
	}
	members, ok := p.object(raw, path)
	if !ok {
		return s, false
	}
	given, has := map[string]bool{}, map[string]bool{}
	for _, m := range members {
		has[m.key] = kind(m.val) != "null"
	}
	var env []string
	var sb serverSandbox
	disabled := false
	urlKey := ""
	for _, m := range members {
		fpath := pathKey(path, m.key)
		if kind(m.val) == "null" {
			if !knownKey(m.key) {
				p.unknownKey(path, m.key)
			}
			continue // null means omitted
		}
		given[m.key] = true
		switch m.key {
		case "type":
			if t, ok := p.str(m.val, fpath); ok {
				if s.Type, ok = typeAliases[t]; !ok {
					p.addf("%s must be %q, %q or %q, not %q", fpath, TypeStdio, TypeHTTP, TypeSSE, t)
				}
			}
		case "command":
			s.Command = p.nonEmptyString(m.val, fpath, "a program name or path")
		case "url", "httpUrl", "serverUrl":
			if urlKey != "" {
				p.addf("%s: give one of %q and %q, not both", path, urlKey, m.key)
				continue
			}
			urlKey = m.key
			s.URL = p.url(m.val, fpath)
		case "args":
			s.Args = p.stringArray(m.val, fpath)
		case "env":
			env = p.env(m.val, fpath)
		case "envFile":
			s.EnvFile = p.nonEmptyString(m.val, fpath, "the path of a KEY=VALUE file")
			if s.EnvFile != "" {
				s.EnvFile = p.envFileEntries(s.EnvFile, fpath, &s.Env)
			}
		case "cwd":
			s.Cwd = p.nonEmptyString(m.val, fpath, "a directory (omit it to use mcpfsm's working directory)")
		case "headers":
			s.Headers = p.headers(m.val, fpath)
		case "disabled":
			disabled = p.boolean(m.val, fpath)
		case "disabledTools": // Windsurf's
			s.ExcludeTools = append(s.ExcludeTools, p.toolList(m.val, fpath)...)
		case "timeout":
			if !p.gemini {
				p.warnf("%s is ignored: mcpfsm does not use it (a key of Cline, in seconds; mcpfsm's are connectTimeoutMs and callTimeoutMs)", fpath)
				continue
			}
			if has["callTimeoutMs"] {
				p.addf(`%s: give one of "timeout" and "callTimeoutMs", not both`, path)
			}
			s.CallTimeout = p.millis(m.val, fpath, 1)
		case "trust":
			// Gemini's: skip confirmations. mcpfsm asks for none.
		case "sandboxEnabled", "sandbox":
			p.sandboxKey(&sb, m, fpath)
		case "tcp":
			p.addf("%s: Gemini CLI's websocket transport is not supported: mcpfsm speaks stdio (command), Streamable HTTP (httpUrl) and SSE (url)", fpath)
		default:
			if p.extension(&s, m, fpath, has) {
				continue
			}
			if host, ok := ignoredKeys[m.key]; ok {
				p.warnf("%s is ignored: mcpfsm does not use it (a key of %s)", fpath, host)
				continue
			}
			p.unknownKey(path, m.key)
		}
	}
	s.Env = append(s.Env, env...)
	p.settleURL(path, &s, urlKey, given)
	p.checkType(path, &s, given)
	p.checkPolicy(path, &s)
	p.settleSandbox(path, &s, &sb)
	if disabled {
		p.warnf("%s is disabled (\"disabled\": true): not started", path)
		return s, false
	}
	return s, len(p.errs) == before
}

// knownKey reports whether key is a server key Parse reads or ignores.
func knownKey(key string) bool {
	_, ignored := ignoredKeys[key]
	return ignored || slices.Contains(serverKeys, key) || slices.Contains(otherKeys, key)
}

// extension parses m if it is one of mcpfsm's own keys, which every
// layout shares. It reports whether it was. has holds the entry's keys.
func (p *parser) extension(s *Server, m member, fpath string, has map[string]bool) bool {
	switch m.key {
	case "reconnect":
		p.reconnectWarnings(m.val, fpath)
		pol, err := policy.Parse(m.val, fpath)
		if err != nil {
			p.flatten(err)
		} else {
			s.Reconnect = pol
		}
	case "failOnStartupError":
		s.FailOnStartupError = p.boolean(m.val, fpath)
	case "connectTimeoutMs":
		s.ConnectTimeout = p.millis(m.val, fpath, 1)
	case "callTimeoutMs":
		if has["timeout"] && p.gemini {
			return true // reported with "timeout"
		}
		s.CallTimeout = p.millis(m.val, fpath, 1)
	case "closeTimeoutMs":
		s.CloseTimeout = p.millis(m.val, fpath, 1)
	case "keepAliveMs":
		s.KeepAlive = p.millis(m.val, fpath, 0)
	case "includeTools":
		s.IncludeTools = p.toolList(m.val, fpath)
	case "excludeTools":
		s.ExcludeTools = append(s.ExcludeTools, p.toolList(m.val, fpath)...)
	case "maxConcurrentCalls":
		s.MaxConcurrentCalls = p.positiveInt(m.val, fpath, "the most calls in flight at once")
	default:
		if p.isolationKey(s, m, fpath) {
			return true
		}
		return p.policyKey(s, m, fpath)
	}
	return true
}

// settleURL sets the type an endpoint key implies: "httpUrl" and
// "serverUrl" are Streamable HTTP, and so is "url", but in a Gemini CLI
// file, where it is SSE. A "type" given wins for "url" and must agree for
// the others. checkType then treats every endpoint key as "url".
func (p *parser) settleURL(path string, s *Server, urlKey string, given map[string]bool) {
	if urlKey == "" {
		return
	}
	given["url"] = true
	implied := urlKeys[urlKey]
	if implied == "" && p.gemini {
		implied = TypeSSE
	}
	switch {
	case implied == "" || given["type"] && s.Type == "":
	case !given["type"]:
		s.Type = implied
	case s.Type != implied && urlKey != "url":
		p.addf(`%s: %q is a Streamable HTTP endpoint: drop "type", or give the endpoint as "url"`, path, urlKey)
	}
}

// checkType settles s.Type from "type", "command" and "url", and rejects
// the options that do not apply to it.
func (p *parser) checkType(path string, s *Server, given map[string]bool) {
	switch {
	case given["type"] && s.Type == "":
		return // already reported
	case given["command"] && given["url"]:
		p.addf(`%s: give exactly one of "command" or "url", not both`, path)
		return
	case !given["command"] && !given["url"]:
		if s.Type == TypeStdio {
			p.addf(`%s: "type": "stdio" needs a "command"`, path)
		} else if s.Type != "" {
			p.addf(`%s: "type": %q needs a "url"`, path, s.Type)
		} else {
			p.addf(`%s: give exactly one of "command" (a stdio server) or "url" (an HTTP server)`, path)
		}
		return
	case s.Type == TypeStdio && given["url"]:
		p.addf(`%s: "type": "stdio" needs a "command", not a "url"`, path)
		return
	case s.Type != "" && s.Type != TypeStdio && given["command"]:
		p.addf(`%s: "type": %q needs a "url", not a "command"`, path, s.Type)
		return
	case s.Type == "" && given["command"]:
		s.Type = TypeStdio
	case s.Type == "":
		s.Type = TypeHTTP
	}
	wrong, kind := httpOnly, `"url"`
	if s.Type != TypeStdio {
		wrong, kind = stdioOnly, `"command"`
	}
	for _, k := range wrong {
		if given[k] {
			p.addf(`%s only applies to %s servers`, pathKey(path, k), kind)
		}
	}
}

func (p *parser) unknownKey(path, key string) {
	p.addf("%s is not a server option (%s)", pathKey(path, key), suggest(key, serverKeys))
}

func (p *parser) boolean(raw json.RawMessage, path string) bool {
	if kind(raw) != "boolean" {
		p.addf("%s must be true or false, not %s", path, article(kind(raw)))
		return false
	}
	return string(raw) == "true"
}

// headers parses an object of HTTP header values.
func (p *parser) headers(raw json.RawMessage, path string) http.Header {
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
		v, ok := p.text(m.val, kpath)
		if ok && strings.ContainsAny(v, "\r\n") {
			p.addf("%s must not contain a line break", kpath)
			continue
		}
		h.Add(m.key, v)
	}
	return h
}

// headerName reports whether s is an RFC 9110 token.
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// reconnectWarnings warns about delays and attempts given with
// "enabled": false: they never apply.
func (p *parser) reconnectWarnings(raw json.RawMessage, path string) {
	if kind(raw) != "object" {
		return // policy.Parse reports it
	}
	q := &parser{} // policy.Parse reports malformed members
	members, _ := q.object(raw, path)
	disabled := slices.ContainsFunc(members, func(m member) bool { return m.key == "enabled" && string(m.val) == "false" })
	if !disabled {
		return
	}
	for _, m := range members {
		if m.key != "enabled" && kind(m.val) != "null" {
			p.warnf("%s has no effect: reconnect is disabled (\"enabled\": false); remove it, or enable reconnect", pathKey(path, m.key))
		}
	}
}

// suggest names the known key that key was probably meant to be, or lists
// them all.
func suggest(key string, known []string) string {
	best, bestD := "", 3 // at most two edits away
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return "did you mean " + k + "?"
		}
		if d := distance(strings.ToLower(key), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" && len(key) > bestD {
		return "did you mean " + best + "?"
	}
	return "known keys: " + strings.Join(known, ", ")
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
