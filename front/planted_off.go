//go:build !simbugs

package front

import (
	"sync"

	"github.com/mcpfsm/mcpfsm/front/internal/instance"
)

// The seams of the planted bugs of package front/internal/bugs. In every
// build without the tag simbugs each does what front does, and the
// gateway reads no switch of the simulator; planted.go, built only with
// the tag, plants the bugs there.

// plantInstance makes a client's own instance of a server: mk().
func plantInstance(_ *Front, _ string, mk func() (*instance.Instance, error)) (*instance.Instance, error) {
	return mk()
}

// plantRootsForward releases mu, the roots' lock, and then forwards the
// roots to the client's instances: an instance that starts takes mu to
// read the roots while it holds its own lock.
func plantRootsForward(mu *sync.Mutex, forward func()) {
	mu.Unlock()
	forward()
}
