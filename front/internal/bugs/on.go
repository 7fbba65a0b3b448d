//go:build simbugs

package bugs

// Planted reports whether the switches can be turned on: true, in a build
// with the tag simbugs.
const Planted = true

// The planted bugs.
var (
	// BridgeForgetsSubject looks a round trip's requestState up among the
	// bridged calls of every client (front/internal/bridge), not only
	// among those of the client that sent it: any client that learns a
	// requestState answers that call and reads its result.
	BridgeForgetsSubject bool
	// InstancesWithoutClient keys the per-client instances by server
	// alone (front/instance.go): the first client's instance of a server
	// serves every client after it, with the first client's roots.
	InstancesWithoutClient bool
	// RootsLockReversed forwards a client's new roots to its instances
	// with the roots' lock still held (roots.read in front/roots.go): an
	// instance that starts holds its own lock and takes the roots' lock
	// to read them, so the two wait for each other.
	RootsLockReversed bool
)
