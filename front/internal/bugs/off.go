//go:build !simbugs

package bugs

// Planted reports whether the switches can be turned on: false, in a
// build without the tag simbugs.
const Planted = false

// The planted bugs, off for good in this build (see on.go for what each
// plants).
const (
	BridgeForgetsSubject   = false
	InstancesWithoutClient = false
	RootsLockReversed      = false
)
