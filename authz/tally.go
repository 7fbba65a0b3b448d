package authz

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Verdict is what a Guard made of one request.
type Verdict uint8

// Verdicts.
const (
	// Allowed: the request passed the rules and the rate limit.
	Allowed Verdict = iota
	// Denied: the rules refused it (a missing scope).
	Denied
	// Limited: the rate limit refused it.
	Limited
)

// TallyWindow is the time a [Tally] counts over, in TallyBuckets
// buckets of a minute.
const (
	TallyWindow  = time.Hour
	TallyBuckets = 60
)

// MaxTallySubjects bounds the subjects a [Tally] counts apart per server;
// the calls of subjects beyond it are counted together, in the Count with
// Others set.
const MaxTallySubjects = 1000

// Tally counts, per server and per caller, the requests of the last hour
// and their verdicts, in a ring of minute buckets per caller: what the
// console shows. A caller with nothing in the last hour is forgotten. It
// is safe for concurrent use.
type Tally struct {
	clk clock.Clock

	mu      sync.Mutex
	servers map[string]map[tallyKey]*ring
	pruned  int64 // the minute of the last prune
}

type tallyKey struct {
	key
	others bool
}

// ring holds one caller's counts: bucket i counts minute[i].
type ring struct {
	minute [TallyBuckets]int64
	counts [TallyBuckets][3]uint32 // by Verdict
	last   int64                   // the minute of the last request
}

// NewTally returns an empty tally reading time from clk (the real clock
// when nil).
func NewTally(clk clock.Clock) *Tally {
	if clk == nil {
		clk = clock.New()
	}
	return &Tally{clk: clk, servers: map[string]map[tallyKey]*ring{}}
}

// minuteOf is t's minute since the Unix epoch.
func minuteOf(t time.Time) int64 { return t.Unix() / 60 }

// Add counts one request of c to server with verdict v.
func (t *Tally) Add(server string, c Caller, v Verdict) {
	if v > Limited {
		return
	}
	now := minuteOf(t.clk.Now())
	t.mu.Lock()
	defer t.mu.Unlock()
	if now != t.pruned {
		t.prune(now)
	}
	callers := t.servers[server]
	if callers == nil {
		callers = map[tallyKey]*ring{}
		t.servers[server] = callers
	}
	k := tallyKey{key: c.key()}
	r := callers[k]
	if r == nil {
		if len(callers) >= MaxTallySubjects {
			k = tallyKey{others: true}
			r = callers[k]
		}
		if r == nil {
			r = &ring{}
			callers[k] = r
		}
	}
	i := now % TallyBuckets
	if r.minute[i] != now {
		r.minute[i], r.counts[i] = now, [3]uint32{}
	}
	r.counts[i][v]++
	r.last = now
}

// prune forgets the callers with nothing in the window ending at minute
// now, and the servers left with none.
func (t *Tally) prune(now int64) {
	for server, callers := range t.servers {
		for k, r := range callers {
			if now-r.last >= TallyBuckets {
				delete(callers, k)
			}
		}
		if len(callers) == 0 {
			delete(t.servers, server)
		}
	}
	t.pruned = now
}

// Count is one caller's requests to one server over the last hour.
type Count struct {
	Server   string
	Subject  string
	Operator bool
	// Others is the count of the subjects beyond MaxTallySubjects.
	Others bool

	Allowed, Denied, Limited int
}

// Refused is how many of the requests the rules or the limit refused.
func (c Count) Refused() int { return c.Denied + c.Limited }

// Counts returns the counts of the last hour of server's callers, or of
// every server's when server is "", ordered by server, then subject
// (the operator first, others last). Callers with nothing in the hour
// are left out.
func (t *Tally) Counts(server string) []Count {
	now := minuteOf(t.clk.Now())
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Count
	for s, callers := range t.servers {
		if server != "" && s != server {
			continue
		}
		for k, r := range callers {
			c := Count{Server: s, Subject: k.subject, Operator: k.operator, Others: k.others}
			for i := range TallyBuckets {
				if now-r.minute[i] < TallyBuckets {
					c.Allowed += int(r.counts[i][Allowed])
					c.Denied += int(r.counts[i][Denied])
					c.Limited += int(r.counts[i][Limited])
				}
			}
			if c.Allowed+c.Refused() > 0 {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b Count) int {
		rank := func(c Count) int {
			switch {
			case c.Operator:
				return 0
			case c.Others:
				return 2
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Subject, b.Subject))
	})
	return out
}
