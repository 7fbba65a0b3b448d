//go:build race

package front

// bigResultBytes is the size of the large result of
// TestALargeResultIsCutAndKeptForItsCaller: 1 MB under the race detector,
// whose instrumented JSON encoding of 5 MB through the backend's and the
// front's sessions takes over a minute on a loaded 2-core machine.
const bigResultBytes = 1 << 20
