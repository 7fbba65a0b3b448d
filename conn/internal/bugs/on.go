//go:build simbugs

package bugs

// Planted reports whether the switches can be turned on: true, in a build
// with the tag simbugs.
const Planted = true

// The planted bugs.
var (
	// NoGenerationFence removes the fence of the supervisor's attemptDone
	// (conn/loop.go): the outcome of an attempt the supervisor no
	// longer waits for, because disposal retired it, is acted on.
	NoGenerationFence bool
	// SkipCloseBarrier releases a closing generation at once, without
	// waiting for its transport's process to be gone (conn/loop.go),
	// so the next generation may start beside it.
	SkipCloseBarrier bool
	// CallIgnoresDeadline sends a request with a context that neither the
	// caller's deadline, CallTimeout nor the generation's shutdown cancels
	// (conn/session.go).
	CallIgnoresDeadline bool
	// PublishBeforeListed takes the first page of a tools/list for the
	// whole listing (conn/session.go): a listing is published before it is
	// complete.
	PublishBeforeListed bool
)
