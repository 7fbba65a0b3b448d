// Package errstyle holds no code: its test checks that the error strings
// of the library packages follow the convention written in package conn
// (conn/errors.go). An error about one server starts with
// `mcp server "<name>": `, an invalid setting with its field or path, an
// error with no other subject with its own package's name, and a sentinel
// error carries no prefix.
package errstyle
