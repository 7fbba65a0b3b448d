// Package config reads the MCP server lists that agent hosts already
// have, so that a Go program can supervise the same servers (package host
// runs them; host.ConnConfig is a server's conn.Config). It is a parser of
// file formats and knows no connection.
//
// Three layouts are read, unchanged:
//
//   - "mcpServers": Claude Desktop's claude_desktop_config.json, Claude
//     Code's .mcp.json, Cursor's .cursor/mcp.json, Gemini CLI's
//     .gemini/settings.json and Windsurf's mcp_config.json;
//   - "servers" (with an optional "inputs" array): VS Code's mcp.json,
//     also mcpfsm's own layout;
//   - [mcp_servers.NAME] tables: Codex's ~/.codex/config.toml (TOML).
//
// JSON files may hold // and /* */ comments and trailing commas (JSONC).
// A server is a stdio command or an HTTP endpoint:
//
//	"fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}"]}
//	"api":  {"type": "http", "url": "https://host/mcp", "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}}
//
// with the hosts' keys type ("stdio", "http" or "sse"), command, args,
// env, envFile, cwd, url and headers, and mcpfsm's extensions reconnect
// (see package policy), failOnStartupError, connectTimeoutMs,
// callTimeoutMs, closeTimeoutMs, keepAliveMs, includeTools, excludeTools,
// maxConcurrentCalls, allowScopes, toolScopes and rateLimit. A server
// with "disabled": true is left out.
//
// includeTools and excludeTools list the server's own tool names, '*'
// matching any run of characters; exclusion wins (see
// [Server.ToolAllowed]; the runtime applies them). maxConcurrentCalls
// bounds the server's calls in flight.
//
// The per-caller policy of `mcpfsm serve` (package authz) has three keys:
//
//	"allowScopes": ["gh:read", "gh:admin"]
//	"toolScopes":  {"delete_*": ["gh:admin"]}
//	"rateLimit":   "5/s"
//
// A caller needs one of allowScopes (OAuth scopes of its access token) to
// see or use any of the server's tools, prompts and resources; and, for a
// tool or prompt whose own name matches a toolScopes pattern ('*' as in
// includeTools), also one of that pattern's scopes, for every pattern it
// matches. The static token's holder (the operator) passes every rule.
// rateLimit ("N/s", "N/m" or "N/h") caps each caller's calls to the
// server. An empty allowScopes or scope list is an error, an empty
// toolScopes a warning; so is a toolScopes pattern that the file shows
// guards nothing (it matches none of the tools a literal includeTools
// serves, or only tools excludeTools leaves out). Other patterns are
// checked against the tools when serve lists them. [Server.Rules] and
// [Server.Limiter] build the policy.
//
// Strings in command, args, env, envFile, cwd, url and headers have
// their variables substituted: ${VAR} (an error when unset),
// ${VAR:-default}, ${env:VAR} (empty, with a warning, when unset),
// ${workspaceFolder} (the parent of the .vscode directory holding the
// file, else the file's directory, for [Load]; else the working
// directory), ${userHome} and ${pathSeparator}.
// ${input:ID} is an error: mcpfsm runs unattended and cannot prompt.
//
// # Other hosts
//
// Gemini CLI reads "url" as an SSE endpoint and "httpUrl" as a Streamable
// HTTP one, "timeout" as the call timeout in milliseconds, $VAR as ${VAR},
// and "includeTools" and "excludeTools" as mcpfsm does; "trust" changes
// nothing, since mcpfsm asks for no confirmation. Its lists "mcp.allowed"
// and "mcp.excluded" (and the older "allowMCPServers" and
// "excludeMCPServers") leave servers out, and its other settings are
// ignored with one warning. A file is Gemini CLI's when [Load] reads it
// as settings.json, or when it has one of Gemini's settings (ui, general,
// security, mcp, ...) or server keys (httpUrl, trust, ...). Outside it,
// "url" is Streamable HTTP (unless "type" says "sse") and "timeout", a
// Cline key in seconds, is ignored with a warning.
//
// Windsurf's "serverUrl" is a Streamable HTTP endpoint and its
// "disabledTools" adds to excludeTools.
//
// In Codex's config.toml, each [mcp_servers.NAME] table has command, args,
// env, env_vars (mcpfsm's variables to pass on), cwd, url,
// bearer_token_env_var (the variable holding the token sent as
// "Authorization: Bearer"; unset or empty, an error that names the
// variable, never its value), http_headers, env_http_headers,
// startup_timeout_sec (ConnectTimeout; Codex's default, 10 s, when
// omitted), tool_timeout_sec (CallTimeout; 60 s when omitted), required
// (FailOnStartupError), enabled (false leaves the server out),
// enabled_tools and disabled_tools (IncludeTools and ExcludeTools). The
// extensions Codex has no key for are read under their names above
// (reconnect, closeTimeoutMs, keepAliveMs, maxConcurrentCalls). Codex
// substitutes no variables, and Parse substitutes none in its files. The
// file's other settings (model, profiles, ...) are ignored silently: a
// Codex file holds many.
//
// Parsing is strict: unknown keys (with a suggestion), wrong types and
// bad values are errors, all reported at once, each naming its path.
// Keys that another host uses and mcpfsm ignores (alwaysAllow,
// autoApprove, dev, ...) are warnings in Config.Warnings.
//
// # Sandboxes
//
// VS Code's "sandboxEnabled": true on a stdio server runs it sandboxed
// (Linux; see package sandbox) with the effective "sandbox" block: the
// file's top-level block overridden key by key by the server's own.
// A block has "filesystem" (allowWrite, denyRead, denyWrite, and mcpfsm's
// allowRead), "network" (allowedDomains, deniedDomains,
// allowAllUnixSockets) and mcpfsm's
// "limits" (memoryMB, maxProcs, maxFiles); its paths expand variables as
// args do, then a leading ~, and a relative path is taken from the file's
// directory. Options.SandboxAll sandboxes every stdio server that does not
// say "sandboxEnabled": false. [Server.Check] reports a sandbox this
// machine cannot give.
package config
