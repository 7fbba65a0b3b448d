package config

import (
	"net/http"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/tree"
	"github.com/mcpfsm/mcpfsm/policy"
)

// The dialects of the JSON hosts' files.
var (
	// hostDialect reads VS Code's mcp.json, Claude Desktop's and Claude
	// Code's files, Cursor's and Windsurf's: one set of keys.
	hostDialect = dialect{
		fields: hostFields, keys: hostKeys, ignored: hostIgnored, vars: braceVars,
		disabledBy: `"disabled": true`, setting: hostSetting,
	}
	// geminiDialect reads Gemini CLI's settings.json: the same keys, but
	// "url" is SSE, "timeout" the call timeout in milliseconds, $VAR a
	// variable, and the file's other keys are Gemini's settings.
	geminiDialect = dialect{
		fields: with(hostFields, map[string]setter{"timeout": geminiTimeout, "callTimeoutMs": geminiCallTimeout}),
		keys:   hostKeys, ignored: hostIgnored, vars: bareVars, sseURL: true,
		disabledBy: `"disabled": true`, setting: geminiSetting,
	}
)

// hostKeys are the options of one server, in documentation order: the
// hosts' keys, then mcpfsm's extensions. hostFields reads them and a few
// more: the hosts' spellings of options these have.
var hostKeys = []string{
	"type", "command", "args", "env", "envFile", "cwd", "url", "httpUrl", "serverUrl", "headers",
	"disabled", "sandboxEnabled", "sandbox",
	"reconnect", "failOnStartupError", "connectTimeoutMs", "callTimeoutMs", "closeTimeoutMs", "keepAliveMs",
	"includeTools", "excludeTools", "maxConcurrentCalls", "isolation", "maxInstances", "roots",
	"allowScopes", "toolScopes", "rateLimit", "maxResultBytes",
}

// hostFields are the server keys of the JSON hosts, with mcpfsm's
// extensions.
var hostFields = with(extensions, map[string]setter{
	"type": setType,
	// Cline's older spelling of "type".
	"transportType": clineType,
	"command":       command,
	"args":          args,
	"env":           hostEnv,
	"envFile":       envFile,
	"cwd":           cwd,
	// The endpoint, by each host's key (see settleURL).
	"url": endpoint, "httpUrl": endpoint, "serverUrl": endpoint,
	"headers":        headers,
	"disabled":       disabled,
	"disabledTools":  excludeTools, // Windsurf's
	"timeout":        clineTimeout,
	"trust":          func(*parser, *entry, member, string) {}, // Gemini's: skip confirmations. mcpfsm asks for none.
	"tcp":            tcp,
	"sandboxEnabled": sandboxKey,
	"sandbox":        sandboxKey,
	"oauth":          oauthKey,
	"auth":           cursorAuth,
})

// extensions are mcpfsm's own keys, which the JSON dialects read; Codex
// reads some and spells others its own way (codexSpelling).
var extensions = map[string]setter{
	"reconnect":          reconnect,
	"failOnStartupError": failOnStartupError,
	"connectTimeoutMs":   ms(connectTimeout, 1),
	"callTimeoutMs":      ms(callTimeout, 1),
	"closeTimeoutMs":     ms(closeTimeout, 1),
	"keepAliveMs":        ms(keepAlive, 0),
	"includeTools":       includeTools,
	"excludeTools":       excludeTools,
	"maxConcurrentCalls": maxConcurrentCalls,
	"isolation":          isolation,
	"upstreamAuth":       upstreamAuth,
	"maxInstances":       maxInstances,
	"roots":              roots,
	"allowScopes":        allowScopes,
	"toolScopes":         toolScopes,
	"rateLimit":          rateLimit,
	"maxResultBytes":     maxResultBytes,
}

// hostIgnored are server keys of other hosts that mcpfsm does not use,
// with the host that uses them. "disabled" is read: a disabled server is
// left out.
var hostIgnored = map[string]string{
	"alwaysAllow":    "Cline",
	"autoApprove":    "Cline",
	"networkTimeout": "Cline",
	"description":    "several hosts",
	"dev":            "VS Code",
	"gallery":        "VS Code",
	"version":        "VS Code",

	"authProviderType":     "Gemini CLI",
	"targetAudience":       "Gemini CLI",
	"targetServiceAccount": "Gemini CLI",
	"extensionName":        "Gemini CLI",
}

// geminiTimeout is Gemini CLI's "timeout": the call timeout, in
// milliseconds.
func geminiTimeout(p *parser, e *entry, m member, path string) {
	if e.has["callTimeoutMs"] {
		p.addf(`%s: give one of "timeout" and "callTimeoutMs", not both`, e.path)
	}
	e.s.CallTimeout = p.millis(m.Value, path, 1)
}

// geminiCallTimeout is "callTimeoutMs" in a file where "timeout" says
// the same: given both, the error is reported with "timeout".
func geminiCallTimeout(p *parser, e *entry, m member, path string) {
	if !e.has["timeout"] {
		ms(callTimeout, 1)(p, e, m, path)
	}
}

// typeAliases maps the "type" values hosts use to mcpfsm's.
var typeAliases = map[string]string{
	TypeStdio: TypeStdio, TypeHTTP: TypeHTTP, TypeSSE: TypeSSE,
	"streamable-http": TypeHTTP, "streamableHttp": TypeHTTP,
}

func setType(p *parser, e *entry, m member, path string) {
	if t, ok := p.str(m.Value, path); ok {
		if e.s.Type, ok = typeAliases[t]; !ok {
			p.addf("%s must be %q, %q or %q, not %q", path, TypeStdio, TypeHTTP, TypeSSE, t)
		}
	}
}

// clineType reads Cline's "transportType" ("stdio", "sse" or
// "streamableHttp") as "type".
func clineType(p *parser, e *entry, m member, path string) {
	if e.has["type"] {
		p.addf(`%s: give one of "type" and "transportType", not both`, e.path)
		return
	}
	e.given["type"] = true
	setType(p, e, m, path)
}

func command(p *parser, e *entry, m member, path string) {
	e.s.Command = p.nonEmptyString(m.Value, path, "a program name or path")
}

func args(p *parser, e *entry, m member, path string) { e.s.Args = p.stringArray(m.Value, path) }

// hostEnv is the JSON hosts' "env", which follows envFile's entries.
func hostEnv(p *parser, e *entry, m member, path string) { e.env = p.env(m.Value, path) }

func headers(p *parser, e *entry, m member, path string) { e.s.Headers = p.headers(m.Value, path) }

func disabled(p *parser, e *entry, m member, path string) { e.disabled = p.boolean(m.Value, path) }

// clineTimeout is Cline's "timeout", in seconds, which mcpfsm ignores.
func clineTimeout(p *parser, e *entry, m member, path string) {
	p.warnf("%s is ignored: mcpfsm does not use it (a key of Cline, in seconds; mcpfsm's are connectTimeoutMs and callTimeoutMs)", path)
}

func tcp(p *parser, e *entry, m member, path string) {
	p.addf("%s: Gemini CLI's websocket transport is not supported: mcpfsm speaks stdio (command), Streamable HTTP (httpUrl) and SSE (url)", path)
}

func failOnStartupError(p *parser, e *entry, m member, path string) {
	e.s.FailOnStartupError = p.boolean(m.Value, path)
}

func includeTools(p *parser, e *entry, m member, path string) {
	e.s.IncludeTools = p.toolList(m.Value, path)
}

// maxResultBytesLimit bounds maxResultBytes (1 TiB).
const maxResultBytesLimit = 1 << 40

func maxResultBytes(p *parser, e *entry, m member, path string) {
	e.s.MaxResultBytes = p.whole(m.Value, path, "a positive number of bytes (the largest tool result passed whole)",
		maxResultBytesLimit, "omit it for serve's -max-result-bytes")
}

func maxConcurrentCalls(p *parser, e *entry, m member, path string) {
	e.s.MaxConcurrentCalls = p.positiveInt(m.Value, path, "the most calls in flight at once")
}

func cwd(p *parser, e *entry, m member, path string) {
	e.s.Cwd = p.nonEmptyString(m.Value, path, "a directory (omit it to use mcpfsm's working directory)")
}

func envFile(p *parser, e *entry, m member, path string) {
	e.s.EnvFile = p.nonEmptyString(m.Value, path, "the path of a KEY=VALUE file")
	if e.s.EnvFile != "" {
		e.s.EnvFile = p.envFileEntries(e.s.EnvFile, path, &e.s.Env)
	}
}

// endpoint reads "url", "httpUrl" or "serverUrl": one of them.
func endpoint(p *parser, e *entry, m member, path string) {
	if e.urlKey != "" {
		p.addf("%s: give one of %q and %q, not both", e.path, e.urlKey, m.Key)
		return
	}
	e.urlKey = m.Key
	e.s.URL = p.url(m.Value, path)
}

func excludeTools(p *parser, e *entry, m member, path string) {
	e.s.ExcludeTools = append(e.s.ExcludeTools, p.toolList(m.Value, path)...)
}

func sandboxKey(p *parser, e *entry, m member, path string) { p.sandboxKey(&e.sandbox, m, path) }

// reconnect is the reconnect policy (package policy reads it).
func reconnect(p *parser, e *entry, m member, path string) {
	p.reconnectWarnings(m.Value, path)
	pol, err := policy.Parse(m.Value.JSON(), path)
	if err != nil {
		p.flatten(err)
		return
	}
	e.s.Reconnect = pol
}

// reconnectWarnings warns about delays and attempts given with
// "enabled": false: they never apply.
func (p *parser) reconnectWarnings(v tree.Value, path string) {
	if enabled, _ := v.Lookup("enabled"); enabled.Kind != tree.Boolean || enabled.Text != "false" {
		return
	}
	for _, m := range v.Members {
		if m.Key != "enabled" && !m.Repeated && m.Value.Kind != tree.Null {
			p.warnf("%s has no effect: reconnect is disabled (\"enabled\": false); remove it, or enable reconnect", pathKey(path, m.Key))
		}
	}
}

// urlKeys are the hosts' keys for an endpoint, with the type each implies
// ("" for the file's default: http, or sse in a Gemini CLI file).
var urlKeys = map[string]string{"url": "", "httpUrl": TypeHTTP, "serverUrl": TypeHTTP}

// settleURL sets the type an endpoint key implies: "httpUrl" and
// "serverUrl" are Streamable HTTP, and so is "url", but in a Gemini CLI
// file, where it is SSE. A "type" given wins for "url" and must agree for
// the others. checkType then treats every endpoint key as "url".
func (p *parser) settleURL(e *entry) {
	if e.urlKey == "" {
		return
	}
	e.given["url"] = true
	implied := urlKeys[e.urlKey]
	if implied == "" && p.d.sseURL {
		implied = TypeSSE
	}
	switch {
	case implied == "" || e.given["type"] && e.s.Type == "":
	case !e.given["type"]:
		e.s.Type = implied
	case e.s.Type != implied && e.urlKey != "url":
		p.addf(`%s: %q is a Streamable HTTP endpoint: drop "type", or give the endpoint as "url"`, e.path, e.urlKey)
	}
}

// stdioOnly are the options only a stdio server may have; httpOnly those
// only an http or sse server may have. Codex's keys are among them.
var (
	stdioOnly = []string{"args", "env", "envFile", "cwd", "env_vars"}
	httpOnly  = []string{"headers", "http_headers", "env_http_headers", "bearer_token_env_var"}
)

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

// headers parses an object of HTTP header values.
func (p *parser) headers(v tree.Value, path string) http.Header {
	members, ok := p.object(v, path)
	if !ok {
		return nil
	}
	h := http.Header{}
	for _, m := range members {
		kpath := pathKey(path, m.Key)
		if !headerName(m.Key) {
			p.addf("%s is not a valid HTTP header name", kpath)
			continue
		}
		s, ok := p.text(m.Value, kpath)
		if ok && strings.ContainsAny(s, "\r\n") {
			p.addf("%s must not contain a line break", kpath)
			continue
		}
		h.Add(m.Key, s)
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
