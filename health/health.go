// Package health answers the probes of a load balancer or an
// orchestrator for a host of supervised MCP servers: /healthz (the
// process serves) and /readyz (every server is established).
//
// A Kubernetes Deployment points its liveness probe at /healthz and its
// readiness probe at /readyz; [Checker.Drain] turns /readyz to 503 at the
// start of a shutdown, so that traffic moves away before the listener
// closes.
package health

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mcpfsm/mcpfsm/conn"
)

// Paths of the probes.
const (
	LivePath  = "/healthz"
	ReadyPath = "/readyz"
)

// Server is one server as a probe reports it.
type Server struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Error is why the server is not established, when known: only in
	// the operator's report ([Checker.ReadyDetailed]). It can hold what
	// the server printed on its stderr.
	Error string `json:"error,omitempty"`
}

// Report is the body of a /readyz answer. Readiness is the servers'
// shared instances': a server whose shared instance came up is ready
// before any client has an instance of its own, and one that cannot
// start never is.
type Report struct {
	Ready    bool     `json:"ready"`
	Draining bool     `json:"draining,omitempty"`
	Servers  int      `json:"servers"`
	NotReady []Server `json:"notReady,omitempty"`
	// Instances counts, per server, the instances running beside its
	// shared one (per-client, or a shared server's 2026-07-28 one):
	// a number, never whose they are.
	Instances map[string]int `json:"instances,omitempty"`
}

// Checker answers the probes for the servers Status returns. Create it
// with [New].
type Checker struct {
	status   func() []Status
	draining atomic.Bool
}

// Status is what the checker needs of one configured server: its name
// and its supervisor's status, or why it has none (it failed to start).
type Status struct {
	Name   string
	Status conn.Status
	// Err, when set, is why the server has no supervisor; Status is then
	// ignored.
	Err error
	// Instances is how many instances of the server run beside its
	// shared one (per-client, or a shared server's 2026-07-28 one).
	Instances int
}

// New returns a checker of the servers status returns, read at every
// probe.
func New(status func() []Status) *Checker { return &Checker{status: status} }

// Drain makes /readyz answer 503 from now on, whatever the servers'
// states: the host is shutting down.
func (c *Checker) Drain() { c.draining.Store(true) }

// Report returns what the operator's /readyz answers now
// ([Checker.ReadyDetailed] without hiding anything).
func (c *Checker) Report() Report {
	r := Report{Draining: c.draining.Load()}
	for _, s := range c.status() {
		r.Servers++
		if s.Instances > 0 {
			if r.Instances == nil {
				r.Instances = map[string]int{}
			}
			r.Instances[s.Name] = s.Instances
		}
		switch {
		case s.Err != nil:
			r.NotReady = append(r.NotReady, Server{Name: s.Name, State: "not started", Error: s.Err.Error()})
		case s.Status.State != conn.Established:
			srv := Server{Name: s.Name, State: string(s.Status.State)}
			if s.Status.LastErr != nil {
				srv.Error = s.Status.LastErr.Error()
			}
			r.NotReady = append(r.NotReady, srv)
		}
	}
	slices.SortFunc(r.NotReady, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	r.Ready = !r.Draining && len(r.NotReady) == 0
	return r
}

// Live answers /healthz: 200 while the process serves. It needs no
// credentials and says nothing about the servers.
func (c *Checker) Live() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// Ready answers /readyz: 200 when every server is established, else 503;
// the JSON body ([Report]) names each server that is not, with its state
// and never its error (which can hold what a server printed on its
// stderr): it is the probe of the MCP endpoint, which every user of it
// can read. It names the servers, so serve it behind the access rule.
func (c *Checker) Ready() http.Handler {
	return c.ready(func() Report {
		rep := c.Report()
		for i := range rep.NotReady {
			rep.NotReady[i].Error = ""
		}
		return rep
	})
}

// ReadyDetailed is [Checker.Ready] with each server's last error, passed
// through hide (a secrets registry's String; nil hides nothing): the
// operator's probe, for the console.
func (c *Checker) ReadyDetailed(hide func(string) string) http.Handler {
	return c.ready(func() Report {
		rep := c.Report()
		if hide != nil {
			for i := range rep.NotReady {
				rep.NotReady[i].Error = hide(rep.NotReady[i].Error)
			}
		}
		return rep
	})
}

func (c *Checker) ready(report func() Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := report()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !rep.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
}
