//go:build simbugs

package bridge

import "github.com/mcpfsm/mcpfsm/front/internal/bugs"

// The seams of the planted bug, open in a build with the tag simbugs (the
// simulator's -planted run): they plant bugs.BridgeForgetsSubject while
// it is on. planted_off.go closes them in every other build.

// plantLookup returns c, or when c is nil and bugs.BridgeForgetsSubject
// is on, the call of any client kept under state.
func plantLookup(c *Call, state string) *Call {
	if v, ok := bugs.AnyCall(state); c == nil && bugs.BridgeForgetsSubject && ok {
		return v.(*Call) // planted: another client's call
	}
	return c
}

// plantKeep records c under its requestState for every client to find
// when bugs.BridgeForgetsSubject is on.
func plantKeep(c *Call) {
	if bugs.BridgeForgetsSubject {
		bugs.KeepCall(c.state, c)
	}
}
