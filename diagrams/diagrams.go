// Package diagrams holds the drawings of conn's machines that cmd/fsmdot
// writes into this folder (go generate ./conn), so that a program shows
// the very drawing the docs do: the console serves [ConnectionSVG].
package diagrams

import _ "embed"

//go:embed connection.svg
var connection string

// ConnectionSVG returns connection.svg: Graphviz's drawing of the DOT that
// fsm.Spec.DOT writes for conn.Table(), superstates as clusters.
func ConnectionSVG() string { return connection }
