//go:build !simbugs

package bridge

// The seams of the planted bug of package front/internal/bugs. In every
// build without the tag simbugs they do what the bridge does, and it
// reads no switch of the simulator; planted.go, built only with the tag,
// plants the bug there.

// plantLookup returns the call a requestState names among its client's
// calls: c, as the client's Set found it.
func plantLookup(c *Call, _ string) *Call { return c }

// plantKeep is called when c takes a new requestState; it does nothing.
func plantKeep(*Call) {}
