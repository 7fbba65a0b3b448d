//go:build simbugs

package front

import (
	"sync"

	"github.com/mcpfsm/mcpfsm/front/internal/bugs"
	"github.com/mcpfsm/mcpfsm/front/internal/instance"
)

// The seams of the planted bugs, open in a build with the tag simbugs
// (the simulator's -planted run): each plants its bug while its switch
// of package front/internal/bugs is on. planted_off.go closes them in
// every other build.

// plantInstance makes a client's own instance of a server with mk, or
// under bugs.InstancesWithoutClient returns the one instance of server
// that every client of f shares.
func plantInstance(f *Front, server string, mk func() (*instance.Instance, error)) (*instance.Instance, error) {
	if !bugs.InstancesWithoutClient {
		return mk()
	}
	v, err := bugs.SharedInstance(f, server, func() (any, error) { return mk() })
	in, _ := v.(*instance.Instance)
	return in, err
}

// plantRootsForward releases mu and then forwards the roots, or under
// bugs.RootsLockReversed forwards them with mu still held.
func plantRootsForward(mu *sync.Mutex, forward func()) {
	if !bugs.RootsLockReversed {
		mu.Unlock()
		forward()
		return
	}
	defer mu.Unlock()
	forward()
}
