package lib

import "github.com/mcpfsm/mcpfsm/lib/internal/bugs"

var _ = bugs.On
