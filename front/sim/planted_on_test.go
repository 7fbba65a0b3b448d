//go:build simbugs

package sim

import "github.com/mcpfsm/mcpfsm/front/internal/bugs"

// plantedBugs are the switches of front/internal/bugs, by name; they exist
// in a build with the tag simbugs only.
var plantedBugs = []plantedBug{
	{"BridgeForgetsSubject", &bugs.BridgeForgetsSubject},
	{"InstancesWithoutClient", &bugs.InstancesWithoutClient},
	{"RootsLockReversed", &bugs.RootsLockReversed},
}
