package conn

import (
	"log/slog"
	"time"
)

// endSink is where a transport reports the end of its session and of its
// process, as they happen: the generation that opened the transport (see
// generation.sessionEnded and generation.processGone). It is set before
// the transport is connected, so nothing is reported before there is
// someone to hear it, and a report is an event of the generation machine,
// whose table ignores what comes too late or twice.
type endSink interface {
	// sessionEnded: the process exited (exited, on the goroutine that
	// reaps it, which blocks on nothing), or the connection closed.
	sessionEnded(src any, exited bool)
	// processGone: the process (group) is gone, and the channel its
	// Terminate returns is closed; on the goroutine that reaped it.
	processGone(src any)
	// processLogger is the logger of what the process's sandbox refused,
	// with the server and generation.
	processLogger() *slog.Logger
}

// ownedProcess is a transport whose process the package runs itself (the
// stdio transport): it reports the process's end to an endSink (src in
// its reports is the transport itself) and fits its shutdown schedule
// into a deadline. It is the one optional interface the generation
// asserts beyond the exported [Terminator].
type ownedProcess interface {
	Terminator
	reportTo(endSink)
	terminateWithin(time.Duration) <-chan struct{}
}
