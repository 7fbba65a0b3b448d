package lib

import "github.com/mcpfsm/mcpfsm/lib/internal/bugs"

func F() bool { return bugs.On }
