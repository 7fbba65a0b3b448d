package conn

import "time"

// resyncLogEvery is the least time between two INFO lines about tool list
// changes: a server that floods list_changed gets one line a second, each
// counting the changes it stands for, and the rest at DEBUG.
const resyncLogEvery = time.Second

// logLimiter coalesces a repeated log line. It is owned by the loop.
type logLimiter struct {
	last       time.Time
	suppressed int // lines since the last one allowed
}

// allow reports whether a line may be logged at its full level now, and
// how many were held back since the previous one.
func (l *logLimiter) allow(now time.Time, every time.Duration) (ok bool, heldBack int) {
	if !l.last.IsZero() && now.Sub(l.last) < every {
		l.suppressed++
		return false, 0
	}
	heldBack, l.last, l.suppressed = l.suppressed, now, 0
	return true, heldBack
}
