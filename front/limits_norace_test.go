//go:build !race

package front

// bigResultBytes is the size of the large result of
// TestALargeResultIsCutAndKeptForItsCaller: 5 MB, the size of a file read
// or page dump that floods a model's context.
const bigResultBytes = 5 << 20
