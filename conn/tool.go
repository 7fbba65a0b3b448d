package conn

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Tool is one server tool as published to a [Registry].
//
// Tools of an unchanged server compare equal across reconnects (ignoring
// unexported fields): the public name, server and raw definition are
// rebuilt identically, so a model sees a stable tool list.
type Tool struct {
	// Name is the public name, from [PublicToolName].
	Name string
	// Server is the supervisor's Name.
	Server string
	// Raw is the definition as the server listed it; Raw.Name is what goes
	// on the wire.
	Raw *mcp.Tool

	gen *generation // the generation that listed the tool; calls go there
}

// MaxTools is the most tools one server may list. A longer list is an
// invalid list: a hostile or broken server cannot exhaust the host's memory.
const MaxTools = 50_000
