package conn

import (
	"sync"

	"github.com/mcpfsm/mcpfsm/fsm"
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
