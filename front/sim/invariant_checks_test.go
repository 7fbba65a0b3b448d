package sim

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// Invariant is one promise of the front, checked on a history.
type Invariant struct {
	Name string
	// Catches is the class of bug the invariant exists for.
	Catches string
	Check   func(h *History) []Violation
}

// Invariants are the front's promises the simulator checks after every
// step of a run.
var Invariants = []Invariant{
	{"NoCrossClient", "a bridge, a relay or a roots read that hands one client's request, roots or result to another",
		noCrossClient},
	{"InstanceServesOneClient", "per-client instances keyed without their client, so one client's instance serves another",
		instanceServesOneClient},
	{"InstanceEndsWithClient", "an instance that outlives its client's session, or its own idle time, by more than the idle bound",
		instanceEndsWithClient},
	{"RequestsEndByDeadline", "a request that waits past its own deadline: a wait that ignores the request's context",
		requestsEndByDeadline},
	{"Progress", "a lock-order cycle or any other deadlock: the run stops with goroutines blocked on locks",
		progress},
	{"NoLeak", "a goroutine that waits for good for what never comes (a round trip, a call's outcome) once everything closed",
		noLeak},
}

func noLeak(h *History) []Violation {
	if len(h.Leaks) == 0 {
		return nil
	}
	return []Violation{{"NoLeak", fmt.Sprintf("%d goroutines left once everything closed:\n%s", len(h.Leaks), strings.Join(h.Leaks, "\n"))}}
}

func noCrossClient(h *History) []Violation {
	var out []Violation
	for _, s := range h.Sightings {
		if s.Client != s.Owner {
			out = append(out, Violation{"NoCrossClient", fmt.Sprintf("at %s client %s saw %s's %s (%s)",
				fmtD(s.At), s.Client, s.Owner, s.What, s.Detail)})
		}
	}
	return out
}

func instanceServesOneClient(h *History) []Violation {
	var out []Violation
	for _, in := range h.Instances {
		for c := range in.Served {
			if c != in.Owner {
				out = append(out, Violation{"InstanceServesOneClient", fmt.Sprintf(
					"instance %d of %q, started for %s, served a request of %s", in.ID, in.Server, in.Owner, c)})
			}
		}
	}
	return out
}

func instanceEndsWithClient(h *History) []Violation {
	var out []Violation
	for _, in := range h.Instances {
		if in.Closed >= 0 {
			continue
		}
		if c := h.Clients[in.Owner]; c != nil && c.Ended >= 0 && h.Now-c.Ended > h.Idle+h.Slack {
			out = append(out, Violation{"InstanceEndsWithClient", fmt.Sprintf(
				"instance %d of %q runs at %s, its client %s ended at %s (idle bound %s)",
				in.ID, in.Server, fmtD(h.Now), in.Owner, fmtD(c.Ended), h.Idle)})
			continue
		}
		// Its client's requests to its server use it, those that reached
		// the backend and those the front answered itself (during an
		// outage, say); a request in flight, or a call its server still
		// serves (one that waits for an answer), holds it.
		last, busy := in.Started, in.Active > 0
		if t, ok := in.Served[in.Owner]; ok {
			last = max(last, t)
		}
		for _, r := range h.Requests {
			if server, _, _ := strings.Cut(r.What, "/"); r.Client != in.Owner || server != in.Server || r.Start < in.Started {
				continue
			}
			if r.End < 0 {
				busy = true
			}
			last = max(last, r.End)
		}
		if !busy && h.Now-last > h.Idle+h.Slack {
			out = append(out, Violation{"InstanceEndsWithClient", fmt.Sprintf(
				"instance %d of %q (client %s) runs at %s, unused since %s (idle bound %s)",
				in.ID, in.Server, in.Owner, fmtD(h.Now), fmtD(last), h.Idle)})
		}
	}
	return out
}

func requestsEndByDeadline(h *History) []Violation {
	var out []Violation
	for _, r := range h.Requests {
		if r.Closing {
			continue // returned when its session's close is done (Closing)
		}
		end := r.End
		if end < 0 {
			end = h.Now
		}
		if end > r.Deadline+h.Slack {
			state := "returned at " + fmtD(r.End)
			if r.End < 0 {
				state = "has not returned at " + fmtD(h.Now)
			}
			out = append(out, Violation{"RequestsEndByDeadline", fmt.Sprintf(
				"request %d of %s (%s), due by %s, %s", r.ID, r.Client, r.What, fmtD(r.Deadline), state)})
		}
	}
	return out
}

func progress(h *History) []Violation {
	if h.Stalled == "" {
		return nil
	}
	return []Violation{{"Progress", "the run stopped making progress at " + fmtD(h.Now) +
		"; goroutines blocked on locks:\n" + h.Stalled}}
}

// Check runs every invariant on h.
func Check(h *History) []Violation {
	var out []Violation
	for _, inv := range Invariants {
		out = append(out, inv.Check(h)...)
	}
	return out
}

// lockWaiters keeps, of a dump of every goroutine's stack, those blocked
// on a sync.Mutex or RWMutex, and says whether there are any.
func lockWaiters(stacks string) (string, bool) {
	var keep []string
	for g := range strings.SplitSeq(stacks, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "[sync.Mutex.Lock") || strings.Contains(head, "[sync.RWMutex") || strings.Contains(head, "[semacquire") {
			keep = append(keep, g)
		}
	}
	slices.Sort(keep)
	return strings.Join(keep, "\n\n"), len(keep) > 0
}

// ownBubble is the tag stack dumps give the caller's synctest bubble,
// "synctest bubble N]"; "" outside a bubble.
func ownBubble() string {
	self := make([]byte, 256)
	self = self[:runtime.Stack(self, false)]
	head, _, _ := strings.Cut(string(self), "\n")
	i := strings.Index(head, "synctest bubble ")
	if i < 0 {
		return ""
	}
	return head[i : i+strings.IndexByte(head[i:], ']')+1]
}

// busy reports whether a dump of every goroutine's stack (the dumping
// goroutine's first) shows another goroutine, of the bubble tagged bubble
// or of none, runnable or running: one that waits for a CPU, not for a
// lock or a channel. A goroutine that waits for the runtime (a garbage
// collection's semaphore) shows no bubble.
func busy(stacks, bubble string) bool {
	first := true
	for g := range strings.SplitSeq(stacks, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if first {
			first = false
			continue
		}
		mine := bubble != "" && strings.Contains(head, bubble) || !strings.Contains(head, "synctest bubble")
		if mine && (strings.Contains(head, " [runnable") || strings.Contains(head, " [running")) {
			return true
		}
	}
	return false
}

// bubbleOthers keeps, of a dump of every goroutine's stack, those of a
// synctest bubble that lockWaiters does not keep.
func bubbleOthers(stacks string) string {
	var keep []string
	for g := range strings.SplitSeq(stacks, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "synctest bubble") && !strings.Contains(head, "[sync.Mutex.Lock") && !strings.Contains(head, "[sync.RWMutex") && !strings.Contains(head, "[semacquire") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// bubbleLeaks returns the goroutines of the caller's synctest bubble other
// than the caller and the bubble's own, each as its header and the
// functions of its stack.
func bubbleLeaks() []string {
	self := make([]byte, 256)
	self = self[:runtime.Stack(self, false)]
	head, _, _ := strings.Cut(string(self), "\n")
	i := strings.Index(head, "synctest bubble ")
	if i < 0 {
		return nil
	}
	bubble := head[i : i+strings.IndexByte(head[i:], ']')+1]
	selfID := strings.Fields(head)[1]
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		first, rest, _ := strings.Cut(g, "\n")
		if !strings.Contains(first, bubble) || strings.HasPrefix(first, "goroutine "+selfID+" ") || strings.Contains(first, "[synctest.Run") ||
			strings.Contains(rest, "testing/synctest.testingSynctestTest") {
			continue
		}
		var fns []string
		for l := range strings.SplitSeq(rest, "\n") {
			if !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "created by") {
				fn, _, _ := strings.Cut(l, "(")
				fns = append(fns, fn)
			}
		}
		out = append(out, first[strings.Index(first, "["):]+" "+strings.Join(fns, " < "))
	}
	slices.Sort(out)
	return out
}
