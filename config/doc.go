// Package config reads the MCP server lists that agent hosts already
// have, so that a Go program can supervise the same servers with package
// conn.
//
// Two layouts are read, unchanged:
//
//   - "mcpServers": Claude Desktop's claude_desktop_config.json, Claude
//     Code's .mcp.json and Cursor's .cursor/mcp.json;
//   - "servers" (with an optional "inputs" array): VS Code's mcp.json,
//     also mcpfsm's own layout.
//
// Files may hold // and /* */ comments and trailing commas (JSONC). A
// server is a stdio command or an HTTP endpoint:
//
//	"fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}"]}
//	"api":  {"type": "http", "url": "https://host/mcp", "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}}
//
// with the hosts' keys type ("stdio", "http" or "sse"), command, args,
// env, envFile, cwd, url and headers, and mcpfsm's extensions reconnect
// (see package policy), failOnStartupError, connectTimeoutMs,
// callTimeoutMs, closeTimeoutMs and keepAliveMs. A server with
// "disabled": true is left out.
//
// Strings in command, args, env, envFile, cwd, url and headers have
// their variables substituted: ${VAR} (an error when unset),
// ${VAR:-default}, ${env:VAR} (empty, with a warning, when unset),
// ${workspaceFolder} (the parent of the .vscode directory holding the
// file, else the working directory), ${userHome} and ${pathSeparator}.
// ${input:ID} is an error: mcpfsm runs unattended and cannot prompt.
//
// Parsing is strict: unknown keys (with a suggestion), wrong types and
// bad values are errors, all reported at once, each naming its JSON path.
// Keys that another host uses and mcpfsm ignores (alwaysAllow,
// autoApprove, dev, ...) are warnings in Config.Warnings.
//
// [Server.Conn] turns an entry into a conn.Config.
package config
