//go:build race

package front

// bigResultBytes is the size of the large result of
// TestALargeResultIsCutAndKeptForItsCaller: 256 KiB under the race
// detector, whose instrumented JSON encoding through the backend's and the
// front's sessions is slow on a loaded 2-core machine (5 MB took over a
// minute; 1 MB passed a request's 10 s deadline once at load average 30).
// The cut, the note and the paged read back do not depend on the size.
const bigResultBytes = 256 << 10
