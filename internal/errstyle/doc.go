// Package errstyle holds no code: its test checks that the error strings
// of the library packages and of the commands follow the convention
// written in package conn (conn/errors.go).
//
// In a library package, an error about one server starts with
// `mcp server "<name>": `, an invalid setting with its field or path, an
// error with no other subject with its own package's name, and a sentinel
// error carries no prefix.
//
// A command (a main package: those under cmd, and the servers and clients
// of the tests under internal) prints its own name before an error it
// fails with (`mcpfsm serve: `, `fsmdot: `), so its error strings carry
// no package or command prefix. They start with what the operator acts
// on: a server the error names is its subject, written first as in the
// library (`mcp server "<name>": `); a flag or an environment variable
// that starts the error is written as typed, with its value if any, and
// a colon (`-http: `, `-log-level "x": `, `MCP_CONFORMANCE_CONTEXT: `).
// What is wrong and the fix follow.
package errstyle
