package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// syncState is a state of a generation's tool-sync machine ([syncTable]).
type syncState string

// The states of the tool-sync machine.
const (
	// syncListing: a tools/list is in flight (the attempt's own, or a re-sync).
	syncListing syncState = "listing"
	// syncStale: a list_changed arrived while listing; list again when done.
	syncStale syncState = "listing-stale"
	// syncIdle: the registered tools are the last listing's.
	syncIdle syncState = "in-sync"
)

// syncEvent is an event of the tool-sync machine.
type syncEvent string

// The events of the tool-sync machine.
const (
	// syncChanged: the server sent notifications/tools/list_changed.
	syncChanged syncEvent = "list-changed"
	// syncListed: a listing finished (and, if it succeeded, was swapped in).
	syncListed syncEvent = "listed"
)

// syncTable returns the declaration of the tool-sync machine each
// generation runs on the supervisor's loop: at most one listing at a time,
// and a storm of list_changed notifications costs at most one more. A
// generation starts in listing, because its attempt lists the tools, so a
// notification that arrives before the connection is up only marks the
// listing stale: the attempt's own listing still decides startup, and the
// re-sync follows once the generation is established.
func syncTable() fsm.Spec[syncState, syncEvent, struct{}] {
	return fsm.Spec[syncState, syncEvent, struct{}]{
		Name:    "tool-sync",
		Initial: syncListing,
		States: []fsm.State[syncState]{
			{Name: syncListing, Doc: "tools/list in flight"},
			{Name: syncStale, Doc: "tools/list in flight; the server changed its tools meanwhile"},
			{Name: syncIdle, Doc: "registered tools are the last listing's"},
		},
		Events: []fsm.Event[syncEvent]{
			{Name: syncChanged, Doc: "notifications/tools/list_changed arrived"},
			{Name: syncListed, Doc: "a listing finished"},
		},
		Transitions: []fsm.Transition[syncState, syncEvent, struct{}]{
			{Event: syncChanged, From: []syncState{syncIdle}, To: syncListing},
			{Event: syncChanged, From: []syncState{syncListing, syncStale}, To: syncStale},
			{Event: syncListed, From: []syncState{syncListing}, To: syncIdle},
			{Event: syncListed, From: []syncState{syncStale}, To: syncListing},
		},
	}
}

// compiledSync is syncTable compiled once: every generation's machine
// shares its tables.
var compiledSync = sync.OnceValues(func() (*fsm.Compiled[syncState, syncEvent, struct{}], error) {
	return fsm.Compile(syncTable())
})

// newSync returns g's tool-sync machine in state; entering listing
// (never the initial state, which is the attempt's listing) starts a
// re-sync.
func (s *Supervisor) newSync(g *generation, state syncState) *fsm.Machine[syncState, syncEvent, struct{}] {
	table, err := compiledSync()
	if err != nil {
		panic(fmt.Sprintf("conn: tool-sync table: %v", err)) // syncTable is tested to be valid
	}
	m, err := table.NewIn(state, fsm.Options[syncState, syncEvent, struct{}]{
		OnEnter: map[syncState]func(context.Context, fsm.Step[syncState, syncEvent, struct{}]){
			syncListing: func(_ context.Context, st fsm.Step[syncState, syncEvent, struct{}]) {
				if st.Event == syncChanged {
					// Coalesced like the sync itself: a flood gets one
					// INFO line a second, counting the changes it stands for.
					level, held := slog.LevelDebug, 0
					if ok, n := s.resyncLog.allow(s.clk.Now(), resyncLogEvery); ok {
						level, held = slog.LevelInfo, n
					}
					s.cfg.Logger.Log(context.Background(), level, "tool list changed, re-syncing",
						"server", s.cfg.Name, "state", string(s.State()), "generation", g.id, "coalesced", held)
				}
				s.resync(g)
			},
		},
		Observer: func(st fsm.Step[syncState, syncEvent, struct{}]) {
			if s.cfg.onStep != nil {
				s.cfg.onStep("tool-sync", string(st.From), string(st.Event), st.When, string(st.To))
			}
		},
		OnError: func(ev syncEvent, err error) {
			s.cfg.Logger.Error("tool-sync machine rejected a queued event; this is a bug in mcpfsm",
				"server", s.cfg.Name, "event", string(ev), "err", err)
		},
	})
	if err != nil {
		panic(fmt.Sprintf("conn: tool-sync table: %v", err)) // syncTable is tested to be valid
	}
	return m
}

// syncFire runs one event on g's tool-sync machine. Only the loop fires.
//
// A generation at rest in in-sync, nearly all of its life, keeps no
// machine (about 1.4 KiB each): the machine is dropped when it reaches
// in-sync, its engine handed back for the next machine's build (see
// fsm.Machine.Rest), and made again, in in-sync, for the next event.
func (s *Supervisor) syncFire(g *generation, ev syncEvent) {
	if g.sync == nil {
		g.sync = s.newSync(g, syncIdle)
	}
	if err := g.sync.Fire(context.Background(), ev); err != nil {
		s.cfg.Logger.Error("tool-sync machine rejected an event; this is a bug in mcpfsm",
			"server", s.cfg.Name, "generation", g.id, "event", string(ev), "err", err)
	}
	if g.sync.State() == syncIdle {
		g.sync.Rest()
		g.sync = nil
	}
}

// syncState is the state of g's tool-sync machine; only the loop reads it.
func (g *generation) syncState() syncState {
	if g.sync == nil {
		return syncIdle
	}
	return g.sync.State()
}

// listChanged handles the kick of a list_changed notification, for the
// generation whose tools are registered (unless it is down) and for the
// attempt in flight, whose machine is still listing.
func (s *Supervisor) listChanged() {
	for _, g := range []*generation{s.current, s.pending} {
		if g != nil && !g.down() && g.changed.Swap(false) {
			s.syncFire(g, syncChanged)
		}
	}
}

// resync lists g's tools off the loop and hands the result back to it.
func (s *Supervisor) resync(g *generation) {
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		ctx, cancel := withTimeout(g.ctx, s.clk, s.cfg.ConnectTimeout)
		defer cancel()
		tools, err := g.listTools(ctx)
		if err != nil {
			err = g.requestFailed(err) // a refused connection is a loss
		}
		s.post(func() { s.resyncDone(g, tools, err) })
	}()
}

// resyncDone swaps a re-sync's tools in, or logs why it could not; either
// way the previous tools stay until a listing succeeds. A listing the
// server did not complete (no answer within ConnectTimeout, an error
// answer) is tried again after the reconnect policy's delay, doubling per
// failure: no list change may come to start the next one, and the
// registry would stay behind the server for good. An invalid list or a
// refused registration waits for the server's next change.
func (s *Supervisor) resyncDone(g *generation, tools []Tool, err error) {
	if g != s.current || g.down() {
		// The generation was retired while it listed: whatever it fetched
		// is stale, and a failure caused by closing it is no news.
		return
	}
	retry := err != nil && !errors.Is(err, ErrInvalidToolList)
	// The same tools again (a re-listing that found no change) leave the
	// registry alone, so nobody hears of a change.
	if err == nil && !s.publishedAre(g, tools) {
		err = s.swap(g, tools)
	}
	if err != nil {
		err = redact.Error(err)
		attrs := []any{"server", s.cfg.Name, "state", string(s.State()), "generation", g.id, "err", err}
		if retry {
			attrs = append(attrs, "retry", g.retryResync(s.cfg.policy.Delay))
		}
		s.cfg.Logger.Error("tool re-sync failed: "+err.Error()+"; the previous tools stay registered", attrs...)
	} else {
		g.resyncFails = 0
	}
	s.syncFire(g, syncListed)
}

// retryResync arms the next re-sync of g after delay(n) for its n-th
// failed one in a row, and returns that delay; the timer signals a list
// change, as the server would. Closing g stops it.
func (g *generation) retryResync(delay func(n int) time.Duration) time.Duration {
	g.resyncFails++
	d := delay(g.resyncFails)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closingLocked() {
		return d
	}
	if g.resyncTimer != nil {
		g.resyncTimer.Stop()
	}
	g.resyncTimer = g.sup.clk.AfterFunc(d, g.signalChanged)
	return d
}

// publishedAre reports whether the published tools are tools, of g, in
// the same order with the same definitions.
func (s *Supervisor) publishedAre(g *generation, tools []Tool) bool {
	if len(s.published) != len(tools) {
		return false
	}
	for i, p := range s.published {
		t := tools[i]
		if p.tool.gen != g || p.tool.Name != t.Name || !reflect.DeepEqual(p.tool.Raw, t.Raw) {
			return false
		}
	}
	return true
}
