//lint:file-ignore SA1019 roots are deprecated upstream (SEP-2577) but still relayed.

// Package bridge carries the calls of MCP clients on protocol 2026-07-28
// across their round trips to a backend that asks them for input.
//
// A client on 2026-07-28 cannot be sent a request while its call is
// served: the server asks in the call's result instead (input_required,
// multi round-trip requests, SEP-2322) and the client calls again with
// the answers. A backend does not know which era its proxy's client
// speaks, so the proxy bridges: the call (tools/call, prompts/get or
// resources/read) runs on the backend across the client's round trips,
// and each request the backend sends during it (elicitation, sampling,
// roots: [Call.Ask]) becomes an input request of the result the client
// gets; its answer, from the client's next round trip, goes back to the
// backend that asked.
//
// The calls of one client are a [Set]. A call's requestState is a random
// 128-bit value kept by its Set alone, with the method and name it was
// made for and the round it answers: another client (another Set),
// another call of the same client, or another round of the same call,
// cannot name it; each round gets a new one. The backend's requests that
// come together (a backend that asks for several inputs at once sends
// them concurrently) are gathered into one round, and each is checked
// against the client capabilities the round trip declared: a request the
// client cannot answer ends the call with MissingRequiredClientCapabilities
// (-32021), and is never sent. Each call is a small declared machine
// ([Spec]): a backend lost while its request is out ends the call as
// lost, reported to the client; it is never sent again.
package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is a state of a bridged call.
type State string

// Event is an event of a bridged call.
type Event string

// The states and events of [Spec].
const (
	Sent          State = "sent"
	InputRequired State = "input-required"
	Answered      State = "answered"
	Completed     State = "completed"
	Lost          State = "lost"

	Ask      Event = "ask"
	Answer   Event = "answer"
	Complete Event = "complete"
	Lose     Event = "lose"
)

// Spec declares the life of a call bridged between a backend and a
// client on protocol 2026-07-28.
func Spec() fsm.Spec[State, Event, struct{}] {
	type tr = fsm.Transition[State, Event, struct{}]
	return fsm.Spec[State, Event, struct{}]{
		Name:    "bridged request",
		Initial: Sent,
		States: []fsm.State[State]{
			{Name: Sent, Doc: "The call is with the backend."},
			{Name: InputRequired, Doc: "The backend asked; the client was answered input_required and its next round trip is awaited."},
			{Name: Answered, Doc: "The client's answer went back to the backend that asked."},
			{Name: Completed, Doc: "The backend answered the call; the client has the result.", Terminal: true},
			{Name: Lost, Doc: "The backend or the client went away mid-call: reported, never sent again.", Terminal: true, Alarm: true},
		},
		Events: []fsm.Event[Event]{
			{Name: Ask, Doc: "The backend sent an elicitation, sampling or roots request."},
			{Name: Answer, Doc: "The client called again with the answers."},
			{Name: Complete, Doc: "The backend answered the call."},
			{Name: Lose, Doc: "The backend's connection ended, the client cancelled or ended, or its answer did not come in time."},
		},
		Transitions: []tr{
			{Event: Ask, From: []State{Sent, Answered, InputRequired}, To: InputRequired},
			{Event: Answer, From: []State{InputRequired}, To: Answered},
			{Event: Complete, From: []State{Sent, InputRequired, Answered}, To: Completed},
			{Event: Lose, From: []State{Sent, InputRequired, Answered}, To: Lost},
		},
	}
}

var machines = sync.OnceValue(func() *fsm.Compiled[State, Event, struct{}] {
	c, err := fsm.Compile(Spec())
	if err != nil {
		panic(err) // the spec is a constant: a test compiles it
	}
	return c
})

// machineOptions are a call's machine's: no callbacks, since the Set
// fires every event itself and logs what matters.
func machineOptions() fsm.Options[State, Event, struct{}] {
	return fsm.Options[State, Event, struct{}]{OnError: func(Event, error) {}}
}

// Options configure a [Set].
type Options struct {
	// Clock times the wait for the client's next round trip. Nil means
	// the real clock.
	Clock clock.Clock
	// Logger receives the lost calls. Nil discards.
	Logger *slog.Logger
	// Wait is how long a round waits for the client's next round trip
	// once server asked: a person may take a while to answer an
	// elicitation, but an abandoned round holds the backend's call.
	Wait func(server string) time.Duration
	// Gone, if set, is called once when a call is lost (the client does
	// not hear of it again): its owner forgets it.
	Gone func(*Call)
	// Owner tags the Set's calls ([Call.Owner]).
	Owner any
	// Gather is how long a round waits, after a request of the backend,
	// for another before it answers the client: the requests a backend
	// makes at once arrive one by one. Each new request restarts the
	// wait, up to ten times Gather in all. Zero means DefaultGather.
	Gather time.Duration
	// GatherClock times Gather. Nil means Clock.
	GatherClock clock.Clock
}

// DefaultGather is the wait for a backend's next request of a round.
const DefaultGather = 20 * time.Millisecond

// Set is the bridged calls of one client, by requestState.
type Set struct {
	o Options

	mu     sync.Mutex
	by     map[string]*Call
	closed bool
	wg     sync.WaitGroup // the calls on the backend
}

// NewSet returns an empty set.
func NewSet(o Options) *Set {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Wait == nil {
		o.Wait = func(string) time.Duration { return 5 * time.Minute }
	}
	if o.Gather <= 0 {
		o.Gather = DefaultGather
	}
	if o.GatherClock == nil {
		o.GatherClock = o.Clock
	}
	return &Set{o: o, by: map[string]*Call{}}
}

// Call is one call bridged to a client.
type Call struct {
	set    *Set
	state  string // the requestState the client echoes, of the current round; guarded by set.mu
	method string // tools/call, prompts/get or resources/read
	name   string // the tool, prompt or resource the call is of
	m      *fsm.Machine[State, Event, struct{}]
	asks   chan *ask    // the backend's requests, in order
	done   chan outcome // the call's outcome, once
	cancel func()       // ends the call on the backend
	ctx    context.Context
	nextID atomic.Uint64 // input request ids
	sent   atomic.Int32  // the backend's requests handed to the rounds
	waitMu sync.Mutex    // one round trip of the client is served at a time

	mu     sync.Mutex // guards what follows
	pend   map[string]*ask
	expiry func() bool  // stops the timer of the wait for the client
	server string       // the server that asked, once one did
	lost   bool         // the backend's connection ended during the call
	caps   Capabilities // what the client's current round trip declared
	rounds int          // the input_required results the client got
	roots  []*mcp.Root  // the roots the client gave during this call; nil until it did
	rooted bool         // roots holds the client's answer
}

// ask is one request of the backend, out to the client.
type ask struct {
	id     string
	req    mcp.InputRequest
	answer chan mcp.InputResponse
	refuse chan error // the request cannot be sent to the client
}

// outcome is what a call's client gets.
type outcome struct {
	res mcp.Result
	err error
}

type callKey struct{}

// Of is the bridged call ctx runs under (a backend's request made under
// the call's context, as the go-sdk client does for a 2026-07-28
// backend's input requests), or nil.
func Of(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Owner is the tag of the call's Set.
func (c *Call) Owner() any { return c.set.o.Owner }

// KeepRoots records roots as the client's answer to a roots request
// during this call, for the server's next roots request of the same call
// (see Roots). Nothing outlives the call.
func (c *Call) KeepRoots(roots []*mcp.Root) {
	c.mu.Lock()
	c.roots, c.rooted = roots, true
	c.mu.Unlock()
}

// Roots returns the roots the client gave during this call, and whether
// it gave any.
func (c *Call) Roots() ([]*mcp.Root, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots, c.rooted
}

// Context is the call's context on the backend.
func (c *Call) Context() context.Context { return c.ctx }

// Awaiting reports whether c's requests are out to its client, whose
// answers the backend awaits: a new request of the backend is not c's
// (the requests of a round come together, see [Options.Gather]).
func (c *Call) Awaiting() bool { return c.m.State() == InputRequired }

// MarkLost records that the backend's connection ended during the call:
// its end is then reported as lost.
func (c *Call) MarkLost() {
	c.mu.Lock()
	c.lost = true
	c.mu.Unlock()
}

// ErrNoCall answers a round trip whose requestState names no call of
// this client's of method and name: it names nothing of any other call.
func ErrNoCall(method, name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"requestState names no %s of %q of this client in progress in mcpfsm: it completed, was lost or waited too long for this answer; send the request again without requestState",
		method, name)}
}

// errEnded answers a round trip of a client that has ended.
var errEnded = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpfsm: the client ended"}

// Ours reports whether state is a requestState of a bridged call's (of
// some Set's): any other is a backend's own, which the client echoes to
// the backend that made it.
func Ours(state string) bool { return strings.HasPrefix(state, statePrefix) }

const statePrefix = "mcpfsm-"

// passPrefix marks a backend's own requestState that the client would
// take for a bridged call's: the backend is itself a bridge (an mcpfsm
// serve behind this one), whose states start with statePrefix too.
const passPrefix = "mcpfsm+"

// Wrap returns a backend's own requestState as its client gets it: as it
// came, unless it starts with "mcpfsm" (a bridge's own, or one Wrap
// made, of a serve behind a serve), which it marks so that the client's
// next round trip reaches the backend instead of naming no call here.
// [Unwrap] undoes it.
func Wrap(state string) string {
	if strings.HasPrefix(state, "mcpfsm") {
		return passPrefix + state
	}
	return state
}

// Unwrap returns the requestState a client echoed as its backend made
// it (see [Wrap]).
func Unwrap(state string) string { return strings.TrimPrefix(state, passPrefix) }

// Round serves a round trip of a client's call of method and name, which
// declared caps: the first (no state, or a backend's own) starts run on
// the backend, detached from ctx; a later one (its requestState names
// the call's current round) carries the answers back. Either returns
// what comes first: an input_required result for the backend's requests,
// or the call's own outcome.
func (s *Set) Round(ctx context.Context, method, name, state string, answers mcp.InputResponseMap, caps Capabilities,
	run func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if Ours(state) {
		s.mu.Lock()
		c := s.by[state]
		s.mu.Unlock()
		c = plantLookup(c, state)
		if c == nil || c.method != method || c.name != name {
			return nil, ErrNoCall(method, name)
		}
		c.mu.Lock()
		c.caps = caps
		c.mu.Unlock()
		if err := c.deliver(ctx, answers); err != nil {
			return nil, err
		}
		return c.await(ctx)
	}
	m, err := machines().New(machineOptions())
	if err != nil {
		return nil, err
	}
	c := &Call{set: s, state: randomState(), method: method, name: name, m: m,
		asks: make(chan *ask, 16), done: make(chan outcome, 1), pend: map[string]*ask{}, caps: caps}
	// The call outlives this round trip: the client's next one carries
	// the answers.
	cctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), callKey{}, c))
	c.ctx, c.cancel = cctx, cancel
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return nil, errEnded
	}
	s.by[c.state] = c
	plantKeep(c)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		res, err := run(cctx)
		c.done <- outcome{res: res, err: err}
	}()
	return c.await(ctx)
}

// Close loses every call of the set (its client ended); Round serves no
// call after it. [Set.Wait] waits for the calls to end on the backend.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	calls := make([]*Call, 0, len(s.by))
	for _, c := range s.by {
		calls = append(calls, c)
	}
	s.mu.Unlock()
	for _, c := range calls {
		c.lose("the client's session ended")
	}
}

// Drop loses the call whose current round state names, if the set holds
// one: it is cancelled on the backend (a task cancelled while its call
// awaits answers, see package front's tasks).
func (s *Set) Drop(state string) {
	s.mu.Lock()
	c := s.by[state]
	s.mu.Unlock()
	if c != nil {
		c.lose("the call was cancelled")
	}
}

// Wait waits until every call of the set has ended on the backend.
func (s *Set) Wait() { s.wg.Wait() }

// Len is how many calls the set holds.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.by)
}

// randomState is a fresh requestState: 128 random bits.
func randomState() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return statePrefix + hex.EncodeToString(b[:])
}

// inputResult is the input_required result of method: the requests the
// client is to answer, and the state it echoes with the answers. The SDK
// keeps the result's type unexported; its JSON decoding is the one way
// to set it.
func inputResult(method string, reqs mcp.InputRequestMap, state string) mcp.Result {
	const skeleton = `{"resultType":"input_required"}`
	switch method {
	case "prompts/get":
		r := &mcp.GetPromptResult{}
		_ = json.Unmarshal([]byte(skeleton), r)
		r.InputRequests, r.RequestState = reqs, state
		return r
	case "resources/read":
		r := &mcp.ReadResourceResult{}
		_ = json.Unmarshal([]byte(skeleton), r)
		r.InputRequests, r.RequestState = reqs, state
		return r
	}
	r := &mcp.CallToolResult{}
	_ = json.Unmarshal([]byte(skeleton), r)
	r.InputRequests, r.RequestState = reqs, state
	return r
}

// await waits for what comes first of c: a request of the backend (the
// client gets it as an input request), or the call's outcome.
func (c *Call) await(ctx context.Context) (mcp.Result, error) {
	s := c.set
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	select {
	case a := <-c.asks:
		asks := c.gather(ctx, a)
		c.mu.Lock()
		caps := c.caps
		c.mu.Unlock()
		if err := caps.check(asks); err != nil {
			for _, a := range asks {
				a.refuse <- err // buffered: the backend's handler may have gone
			}
			c.lose("the client did not declare a capability the server's request needs")
			return nil, err
		}
		reqs := mcp.InputRequestMap{}
		c.mu.Lock()
		for _, a := range asks {
			c.pend[a.id] = a
			reqs[a.id] = a.req
		}
		c.stopExpiry()
		c.expiry = s.o.Clock.AfterFunc(s.o.Wait(c.server), func() { c.lose("the client's answer did not come in time") }).Stop
		c.rounds++
		next := c.rounds > 1
		c.mu.Unlock()
		state, ok := c.nextState(next)
		if !ok {
			return nil, ErrNoCall(c.method, c.name) // lost meanwhile
		}
		c.fire(Ask)
		return inputResult(c.method, reqs, state), nil
	case o := <-c.done:
		c.finish()
		return o.res, o.err
	case <-ctx.Done():
		c.lose("the client cancelled the call")
		return nil, ctx.Err()
	}
}

// gather returns first and the requests of the backend that follow it
// within the set's Gather of each other (at most ten Gathers in all): the
// requests of one round.
func (c *Call) gather(ctx context.Context, first *ask) []*ask {
	s := c.set
	asks := []*ask{first}
	end := s.o.GatherClock.Timer(10 * s.o.Gather)
	defer end.Stop()
	for {
		quiet := s.o.GatherClock.Timer(s.o.Gather)
		select {
		case a := <-c.asks:
			quiet.Stop()
			asks = append(asks, a)
			continue
		case <-quiet.C:
		case <-end.C:
			quiet.Stop()
		case <-ctx.Done():
			quiet.Stop()
		}
		// What came meanwhile is of the round too.
		for {
			select {
			case a := <-c.asks:
				asks = append(asks, a)
			default:
				return asks
			}
		}
	}
}

// nextState is the requestState of c's round now out: a new one, in
// place of the last, when fresh (a round after the first), so that no
// round's state names another's. It reports false if c is gone.
func (c *Call) nextState(fresh bool) (string, bool) {
	s := c.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by[c.state] != c {
		return "", false
	}
	if fresh {
		delete(s.by, c.state)
		c.state = randomState()
		s.by[c.state] = c
		plantKeep(c)
	}
	return c.state, true
}

// forget removes c from its set, and reports whether it was there.
func (c *Call) forget() bool {
	s := c.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by[c.state] != c {
		return false
	}
	delete(s.by, c.state)
	return true
}

// finish ends c with the call's outcome: completed, or lost when the
// backend went away under it.
func (c *Call) finish() {
	c.mu.Lock()
	c.stopExpiry()
	lost := c.lost
	c.mu.Unlock()
	c.forget()
	c.cancel()
	ev := Complete
	if lost {
		ev = Lose
		c.set.o.Logger.Warn("bridged call lost: the server's connection ended during it; it is not sent again",
			"server", c.server, "method", c.method)
	}
	c.fire(ev)
}

// lose ends c as lost: the call is cancelled on the backend, and a
// client that calls again with its requestState is told the call is gone.
func (c *Call) lose(why string) {
	if !c.forget() {
		return
	}
	c.mu.Lock()
	c.stopExpiry()
	c.mu.Unlock()
	c.cancel()
	if c.set.o.Gone != nil {
		c.set.o.Gone(c)
	}
	c.set.o.Logger.Warn("bridged call lost: "+why+"; it is not sent again", "server", c.server, "method", c.method)
	c.fire(Lose)
}

func (c *Call) fire(ev Event) {
	if err := c.m.Fire(context.Background(), ev); err != nil {
		c.set.o.Logger.Debug("bridged call: "+err.Error(), "server", c.server)
	}
}

// stopExpiry stops the wait for the client; c.mu is held.
func (c *Call) stopExpiry() {
	if c.expiry != nil {
		c.expiry()
		c.expiry = nil
	}
}

// deliver hands the client's answers to the backend's requests waiting
// for them.
func (c *Call) deliver(ctx context.Context, answers mcp.InputResponseMap) error {
	c.mu.Lock()
	var missing []string
	for id, a := range c.pend {
		r, ok := answers[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		a.answer <- r // buffered: the backend's handler may have gone
		delete(c.pend, id)
	}
	c.stopExpiry()
	c.mu.Unlock()
	if len(missing) > 0 {
		slices.Sort(missing)
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"inputResponses: no answer to the input requests %q of this call; send it again with them", missing)}
	}
	if c.m.State() == InputRequired {
		_ = c.m.Fire(ctx, Answer)
	}
	return nil
}

// errCallEnded: the call a backend's request belongs to ended first.
var errCallEnded = errors.New("the call this request belongs to ended")

// Ask sends server's request req to the client of c, in the result of
// its current round trip, and returns the client's answer.
func (c *Call) Ask(ctx context.Context, server string, req mcp.InputRequest) (mcp.InputResponse, error) {
	c.mu.Lock()
	if c.server == "" {
		c.server = server
	}
	c.mu.Unlock()
	a := &ask{id: fmt.Sprintf("r%d", c.nextID.Add(1)), req: req, answer: make(chan mcp.InputResponse, 1), refuse: make(chan error, 1)}
	select {
	case c.asks <- a:
		c.sent.Add(1)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, errCallEnded
	}
	select {
	case r := <-a.answer:
		return r, nil
	case err := <-a.refuse:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, errCallEnded
	}
}
