package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Schedule is everything a run does, drawn from its seed: the
// supervisor's settings, what each server process does when it starts,
// and the steps of the host and of the world at their simulated times.
// A run follows its schedule and draws nothing more, so a schedule with
// parts taken out (what the shrinker tries) is still a run.
type Schedule struct {
	Seed  uint64
	Setup Setup  // the first supervisor's settings
	Procs []Proc // process n (in the order they are opened, from 1) follows Procs[n-1]; later ones are healthy
	Steps []Step
	// Abrupt ends the run with Close in the middle of whatever happens;
	// otherwise the world calms first and the run checks that the
	// supervisor recovered.
	Abrupt bool `json:",omitempty"`
}

// Setup is a supervisor's settings, as a host's config would give them.
type Setup struct {
	Protocol           string        `json:",omitempty"` // Config.ProtocolVersion; "" is the default (2026-07-28 with the classic fallback)
	KeepAlive          time.Duration `json:",omitempty"`
	ConnectTimeout     time.Duration
	CallTimeout        time.Duration
	CloseTimeout       time.Duration
	HoldCalls          time.Duration `json:",omitempty"`
	RetryIdempotent    bool          `json:",omitempty"`
	MaxConcurrentCalls int           `json:",omitempty"`
	Disabled           bool          `json:",omitempty"` // the policy's Enabled is false
	InitialDelay       time.Duration
	MaxDelay           time.Duration
	MaxAttempts        int
	ProbeInterval      time.Duration `json:",omitempty"`
	Strict             bool          `json:",omitempty"` // FailOnStartupError
	Roots              []string      `json:",omitempty"` // Config.Roots (which asks for the classic protocol)
	Plain              bool          `json:",omitempty"` // a registry without Replace: the swap unregisters, then registers
	Catalog            bool          `json:",omitempty"` // Config.Catalog: resources and prompts are listed and published too
}

// Proc is what one server process does. The zero Proc is a healthy
// process that exits at once when its stdin closes or it is terminated.
type Proc struct {
	// Refuse makes the process fail to start: "error" (a plain error),
	// "missing" (the command is not installed: conn.ErrPermanent) or
	// "busy" (an HTTP 503 with Retry-After).
	Refuse string `json:",omitempty"`
	// DieOnDiscover exits on the server/discover probe, as older stdio
	// servers do on an unknown method.
	DieOnDiscover bool `json:",omitempty"`
	// CrashOn and HangOn crash, or stop answering, when a request
	// reaches the point.
	CrashOn *Point `json:",omitempty"`
	HangOn  *Point `json:",omitempty"`
	// CrashAfter and HangAfter crash, or stop answering, that long after
	// the process started; zero is never.
	CrashAfter time.Duration `json:",omitempty"`
	HangAfter  time.Duration `json:",omitempty"`
	// HangFor is how long a hang lasts; zero is until the world calms.
	HangFor time.Duration `json:",omitempty"`
	// Latency delays every message the process writes.
	Latency time.Duration `json:",omitempty"`
	// ExitDelay is how long the process outlives its stdin closing or
	// its termination; Never is until the world calms (or the run ends).
	ExitDelay time.Duration `json:",omitempty"`
	// CloseFails makes the client's Close of the connection fail.
	CloseFails bool `json:",omitempty"`
}

// Never is an ExitDelay that never ends by itself.
const Never = time.Duration(-1)

// Point names the N-th request (from 1) of a method a process receives;
// with After, the moment its answer is written rather than the moment it
// arrives.
type Point struct {
	Method string
	N      int
	After  bool `json:",omitempty"`
}

// Step is one thing the host or the world does, After the step before
// it (the first, after the start) in simulated time. Do names it:
//
//   - call: call Tool through the registry with Deadline (0: none), the
//     server working Work on it, or hanging (Hang) until cancelled;
//   - call-kept: call a Tool value looked up N steps earlier, as a host
//     that kept it;
//   - reconnect, subscribe and unsubscribe (of URI), roots (SetRoots to
//     Roots), reload (Close, then Start with Setup, as a host's config
//     reload does);
//   - add-tool, remove-tool, change-tool (of Tool): the server's tool list
//     changes, on every live process;
//   - crash, hang (for Work; 0: until calm) and thaw: the newest live
//     process;
//   - calm: every fault ends, every process that outlived its close exits
//     and every later process is healthy, until the next fault step; the
//     host reconnects a supervisor that stopped, and once the supervisor
//     has had time to recover the run checks that it did.
type Step struct {
	After    time.Duration `json:",omitempty"`
	Do       string
	Tool     string        `json:",omitempty"`
	URI      string        `json:",omitempty"`
	Deadline time.Duration `json:",omitempty"`
	Work     time.Duration `json:",omitempty"`
	Hang     bool          `json:",omitempty"`
	Roots    []string      `json:",omitempty"`
	Setup    *Setup        `json:",omitempty"`
}

// String is the step as a run's log shows it.
func (s Step) String() string {
	out := fmt.Sprintf("+%v %s", s.After, s.Do)
	if s.Tool != "" {
		out += " " + s.Tool
	}
	if s.URI != "" {
		out += " " + s.URI
	}
	if s.Deadline > 0 {
		out += fmt.Sprintf(" deadline=%v", s.Deadline)
	}
	if s.Work > 0 {
		out += fmt.Sprintf(" work=%v", s.Work)
	}
	if s.Hang {
		out += " hang"
	}
	if s.Roots != nil {
		out += fmt.Sprintf(" %v", s.Roots)
	}
	if s.Setup != nil {
		out += " " + s.Setup.String()
	}
	return out
}

// String is the settings as a run's log shows them.
func (s Setup) String() string {
	proto := s.Protocol
	if proto == "" {
		proto = "default"
	}
	out := fmt.Sprintf("{protocol %s, connect %v, call %v, close %v, backoff %v..%v x%d",
		proto, s.ConnectTimeout, s.CallTimeout, s.CloseTimeout, s.InitialDelay, s.MaxDelay, s.MaxAttempts)
	if s.KeepAlive > 0 {
		out += fmt.Sprintf(", keep-alive %v", s.KeepAlive)
	}
	if s.HoldCalls > 0 {
		out += fmt.Sprintf(", hold %v", s.HoldCalls)
		if s.RetryIdempotent {
			out += " retry-idempotent"
		}
	}
	if s.MaxConcurrentCalls > 0 {
		out += fmt.Sprintf(", max calls %d", s.MaxConcurrentCalls)
	}
	if s.ProbeInterval > 0 {
		out += fmt.Sprintf(", probe %v", s.ProbeInterval)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{s.Disabled, "reconnect disabled"}, {s.Strict, "strict"}, {s.Plain, "plain registry"}, {len(s.Roots) > 0, "roots"}, {s.Catalog, "catalog"}} {
		if f.on {
			out += ", " + f.name
		}
	}
	return out + "}"
}

// Tools the server may list: t0 always (so that a 2026-07-28 server
// always has the tools capability a tool-change subscription needs), the
// rest as the steps add and remove them. t1 is annotated read-only and t2
// idempotent, so HoldCalls with RetryIdempotent may send their calls
// again; the others must never run twice for one call.
var toolNames = []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}

// resourceURIs are the resources, and promptNames the prompts, every
// process serves.
var (
	resourceURIs = []string{"sim://r/0", "sim://r/1", "sim://r/2"}
	promptNames  = []string{"p0"}
)

// The methods a fault point may name.
var pointMethods = []string{"server/discover", "initialize", "tools/list", "tools/call", "ping", "subscriptions/listen", "resources/subscribe", "resources/list", "prompts/list"}

// Length is the simulated time a generated schedule spans.
const Length = 3 * time.Minute

// Generate draws the schedule of seed.
func Generate(seed uint64) Schedule {
	r := rand.New(rand.NewPCG(seed, 0x6d637066736d)) // "mcpfsm"
	g := gen{r: r}
	s := Schedule{Seed: seed, Setup: g.setup()}
	procs := 4 + r.IntN(28)
	s.Procs = make([]Proc, procs)
	for i := range s.Procs {
		s.Procs[i] = g.proc(s.Setup)
	}
	n := 10 + r.IntN(50)
	for range n {
		// Steps cluster: a third happen at the same instant as the one
		// before, so that host actions race each other and the server.
		var after time.Duration
		switch r.IntN(6) {
		case 0, 1:
		case 2:
			after = time.Duration(1+r.IntN(20)) * time.Millisecond
		default:
			after = time.Duration(r.IntN(int(Length/time.Millisecond)/n*2)) * time.Millisecond
		}
		s.Steps = append(s.Steps, g.steps(after)...)
	}
	s.Abrupt = g.chance(0.3)
	return s
}

type gen struct{ r *rand.Rand }

func (g gen) pick(ds ...time.Duration) time.Duration { return ds[g.r.IntN(len(ds))] }

func (g gen) chance(p float64) bool { return g.r.Float64() < p }

func (g gen) setup() Setup {
	r := g.r
	s := Setup{
		ConnectTimeout: g.pick(2*time.Second, 5*time.Second, 30*time.Second),
		CallTimeout:    g.pick(500*time.Millisecond, 2*time.Second, 10*time.Second),
		CloseTimeout:   g.pick(500*time.Millisecond, 2*time.Second, 5*time.Second),
		InitialDelay:   g.pick(100*time.Millisecond, 500*time.Millisecond, time.Second),
		MaxAttempts:    1 + r.IntN(6),
	}
	s.MaxDelay = max(s.InitialDelay, g.pick(time.Second, 4*time.Second, 30*time.Second))
	switch r.IntN(4) {
	case 0:
		s.Protocol = "2025-11-25"
	case 1:
		s.Protocol = "2026-07-28"
	}
	if g.chance(0.4) {
		s.KeepAlive = g.pick(time.Second, 3*time.Second, 10*time.Second)
	}
	if g.chance(0.25) {
		s.HoldCalls = g.pick(time.Second, 5*time.Second)
		s.RetryIdempotent = g.chance(0.5)
	}
	if g.chance(0.25) {
		s.MaxConcurrentCalls = 1 + r.IntN(3)
	}
	s.Disabled = g.chance(0.1)
	if g.chance(0.2) {
		s.ProbeInterval = g.pick(2*time.Second, 10*time.Second)
	}
	s.Strict = g.chance(0.1)
	if g.chance(0.1) {
		s.Roots = []string{"file:///w/a"}
	}
	s.Plain = g.chance(0.1)
	s.Catalog = g.chance(0.3)
	return s
}

func (g gen) point() *Point {
	m := pointMethods[g.r.IntN(len(pointMethods))]
	return &Point{Method: m, N: 1 + g.r.IntN(3), After: g.chance(0.4)}
}

func (g gen) proc(s Setup) Proc {
	r := g.r
	var p Proc
	if g.chance(0.45) {
		return p // healthy
	}
	switch r.IntN(10) {
	case 0:
		p.Refuse = []string{"error", "error", "missing", "busy"}[r.IntN(4)]
		return p
	case 1:
		p.DieOnDiscover = true
	case 2, 3:
		p.CrashOn = g.point()
	case 4:
		p.HangOn = g.point()
		p.HangFor = g.pick(0, 300*time.Millisecond, 3*time.Second, 20*time.Second)
	case 5, 6:
		p.CrashAfter = time.Duration(1+r.IntN(20000)) * time.Millisecond
	case 7:
		p.HangAfter = time.Duration(1+r.IntN(20000)) * time.Millisecond
		p.HangFor = g.pick(0, 300*time.Millisecond, 3*time.Second, 20*time.Second)
	}
	if g.chance(0.25) {
		p.Latency = g.pick(time.Millisecond, 50*time.Millisecond, 400*time.Millisecond, 3*time.Second)
	}
	if g.chance(0.3) {
		// Either side of the close barrier, or for ever.
		p.ExitDelay = g.pick(time.Millisecond, s.CloseTimeout/3, s.CloseTimeout*2, Never)
	}
	p.CloseFails = g.chance(0.1)
	return p
}

// steps draws the step (or, for a burst, the steps) after after.
func (g gen) steps(at time.Duration) []Step {
	r := g.r
	tool := toolNames[r.IntN(len(toolNames))]
	switch k := r.IntN(100); {
	case k < 38:
		st := Step{After: at, Do: "call", Tool: tool}
		if g.chance(0.7) {
			st.Deadline = g.pick(100*time.Millisecond, time.Second, 5*time.Second, 30*time.Second)
		}
		switch r.IntN(6) {
		case 0:
			st.Hang = true
		case 1, 2:
			st.Work = g.pick(time.Millisecond, 200*time.Millisecond, 2*time.Second, 20*time.Second)
		}
		return []Step{st}
	case k < 42:
		return []Step{{After: at, Do: "call-kept", Tool: tool, Deadline: g.pick(0, time.Second)}}
	case k < 52:
		return []Step{{After: at, Do: []string{"add-tool", "remove-tool", "change-tool"}[r.IntN(3)], Tool: tool}}
	case k < 56:
		// A burst of list changes, and often a crash in the middle of it.
		var out []Step
		crash := -1
		if g.chance(0.6) {
			crash = r.IntN(5)
		}
		for i := range 3 + r.IntN(5) {
			if i == crash {
				out = append(out, Step{After: time.Duration(r.IntN(8)) * time.Millisecond, Do: "crash"})
			}
			t := toolNames[1+r.IntN(len(toolNames)-1)]
			out = append(out, Step{After: time.Duration(r.IntN(8)) * time.Millisecond, Do: []string{"add-tool", "remove-tool", "change-tool"}[r.IntN(3)], Tool: t})
		}
		out[0].After = at
		return out
	case k < 66:
		return []Step{{After: at, Do: "crash"}}
	case k < 71:
		return []Step{{After: at, Do: "hang", Work: g.pick(0, 200*time.Millisecond, 2*time.Second, 20*time.Second)}}
	case k < 73:
		return []Step{{After: at, Do: "thaw"}}
	case k < 79:
		return []Step{{After: at, Do: "reconnect", Deadline: g.pick(0, 100*time.Millisecond, 5*time.Second)}}
	case k < 82:
		roots := []string{}
		for i := range 3 {
			if g.chance(0.5) {
				roots = append(roots, fmt.Sprintf("file:///w/%d", i))
			}
		}
		return []Step{{After: at, Do: "roots", Roots: roots}}
	case k < 86:
		return []Step{{After: at, Do: []string{"subscribe", "unsubscribe"}[r.IntN(2)], URI: resourceURIs[r.IntN(len(resourceURIs))]}}
	case k < 91:
		s := g.setup()
		return []Step{{After: at, Do: "reload", Setup: &s}}
	default:
		return []Step{{After: at, Do: "calm"}}
	}
}
