//go:build !linux

package proc

import "os"

// startStderr copies the read end of a server's stderr pipe into sink
// from a goroutine of its own.
func startStderr(f *os.File, sink *stderrSink) stderrCopy {
	return copyStderr(f, sink, make(chan struct{}))
}
