//go:build simbugs

package lib

import "github.com/mcpfsm/mcpfsm/lib/internal/bugs"

func plant() bool { return bugs.On }
