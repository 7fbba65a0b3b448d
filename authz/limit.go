package authz

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"golang.org/x/time/rate"
)

// Rate is a rate limit: N calls per Per, in a burst or spread out.
type Rate struct {
	N   int
	Per time.Duration // time.Second, time.Minute or time.Hour
}

// MaxRateN bounds Rate.N: a larger limit is no limit at all.
const MaxRateN = 1_000_000

// units are the periods of a rate limit by their letter.
var units = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// ParseRate parses "N/s", "N/m" or "N/h": N calls per second, minute or
// hour, N a whole number from 1 to MaxRateN. Its errors say what is wrong
// and show the form.
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(s, "/")
	per, known := units[unit]
	switch {
	case !ok:
		return Rate{}, fmt.Errorf("%q is not a rate: give calls per period, as \"5/s\", \"100/m\" or \"1000/h\"", s)
	case !known:
		return Rate{}, fmt.Errorf("%q: the period must be s, m or h (per second, minute or hour), as in \"5/s\"", s)
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 1 || v > MaxRateN || n != strconv.Itoa(v) {
		return Rate{}, fmt.Errorf("%q: the number of calls must be a whole number from 1 to %d, as in \"5/s\"", s, MaxRateN)
	}
	return Rate{N: v, Per: per}, nil
}

// String is the rate as ParseRate reads it, such as "5/s".
func (r Rate) String() string {
	for u, d := range units {
		if d == r.Per {
			return strconv.Itoa(r.N) + "/" + u
		}
	}
	return strconv.Itoa(r.N) + "/" + r.Per.String()
}

// Limiter counts the calls of each caller of one server against its
// rate limit. A nil *Limiter lets every call through. It is safe for
// concurrent use.
type Limiter struct {
	server string
	rate   Rate
	limit  rate.Limit
	clk    clock.Clock

	mu      sync.Mutex
	buckets map[key]*bucket
	swept   time.Time // last sweep of idle buckets
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time // last call
}

// NewLimiter returns the limiter of server for r, reading time from clk
// (the real clock when nil). It returns nil for the zero Rate: no limit.
// It panics on a Rate ParseRate would refuse.
func NewLimiter(server string, r Rate, clk clock.Clock) *Limiter {
	if r == (Rate{}) {
		return nil
	}
	if r.N < 1 || r.N > MaxRateN || r.Per <= 0 {
		panic(fmt.Sprintf("authz.NewLimiter: invalid rate %d per %v", r.N, r.Per))
	}
	if clk == nil {
		clk = clock.New()
	}
	return &Limiter{
		server: server, rate: r, clk: clk,
		limit:   rate.Limit(float64(r.N) / r.Per.Seconds()),
		buckets: map[key]*bucket{}, swept: clk.Now(),
	}
}

// Rate is the limiter's rate; the zero Rate for a nil Limiter.
func (l *Limiter) Rate() Rate {
	if l == nil {
		return Rate{}
	}
	return l.rate
}

// Allow counts one call of c. It answers at once: nil when the call may
// go on, else a *LimitError (matching ErrRateLimited) naming the limit and
// when c's next call is let through. A refused call is not counted.
func (l *Limiter) Allow(c Caller) error {
	if l == nil {
		return nil
	}
	now := l.clk.Now()
	k := c.key()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[k]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.limit, l.rate.N)}
		l.buckets[k] = b
	}
	b.last = now
	ok := b.lim.AllowN(now, 1)
	var wait time.Duration
	if !ok {
		// The time until the bucket holds one whole token, rounded up to
		// the millisecond: a client that waits that long gets through.
		secs := (1 - b.lim.TokensAt(now)) / float64(l.limit)
		wait = time.Duration(math.Ceil(secs*1000)) * time.Millisecond
	}
	if now.Sub(l.swept) >= l.rate.Per {
		l.sweep(now)
	}
	if ok {
		return nil
	}
	return &LimitError{Server: l.server, Rate: l.rate, RetryAfter: wait}
}

// sweep drops the buckets idle for a whole period: refilled at N per
// period, they are full again, as a new bucket would be.
func (l *Limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.last) >= l.rate.Per {
			delete(l.buckets, k)
		}
	}
	l.swept = now
}

// Callers is how many callers the limiter holds a bucket for.
func (l *Limiter) Callers() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// ErrRateLimited is matched (errors.Is) by every [LimitError].
var ErrRateLimited = errors.New("rate limit reached")

// LimitError is a call refused by a server's rate limit.
type LimitError struct {
	Server string
	Rate   Rate
	// RetryAfter is how long until the caller's next call is let through.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("rate limit %s of server %q reached for this caller; try again in %v", e.Rate, e.Server, e.RetryAfter)
}

// Is reports whether target is ErrRateLimited.
func (e *LimitError) Is(target error) bool { return target == ErrRateLimited }
