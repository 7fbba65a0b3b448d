package front

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A front client on protocol 2026-07-28 cannot be sent a request while
// the front serves one of its calls: the server asks in the call's
// result instead (input_required, multi round-trip requests, SEP-2322)
// and the client calls again with the answers. A backend does not know
// which era the front's client speaks, so the front bridges: the call
// runs on the backend across the client's round trips, and each request
// the backend sends during it (elicitation, sampling, roots) becomes an
// input request of the result the client gets; its answer, from the
// client's next round trip, goes back to the backend that asked.
//
// Each bridged call is a small machine, [BridgeSpec]: a backend lost
// while its request is out ends the call as lost, reported to the
// client; it is never sent again.

// BridgeState is a state of a bridged call.
type BridgeState string

// BridgeEvent is an event of a bridged call.
type BridgeEvent string

// The states and events of [BridgeSpec].
const (
	BridgeSent          BridgeState = "sent"
	BridgeInputRequired BridgeState = "input-required"
	BridgeAnswered      BridgeState = "answered"
	BridgeCompleted     BridgeState = "completed"
	BridgeLost          BridgeState = "lost"

	BridgeAsk      BridgeEvent = "ask"
	BridgeAnswer   BridgeEvent = "answer"
	BridgeComplete BridgeEvent = "complete"
	BridgeLose     BridgeEvent = "lose"
)

// BridgeSpec declares the life of a call bridged between a backend and a
// front client on protocol 2026-07-28.
func BridgeSpec() fsm.Spec[BridgeState, BridgeEvent, struct{}] {
	type tr = fsm.Transition[BridgeState, BridgeEvent, struct{}]
	return fsm.Spec[BridgeState, BridgeEvent, struct{}]{
		Name:    "bridged request",
		Initial: BridgeSent,
		States: []fsm.State[BridgeState]{
			{Name: BridgeSent, Doc: "The call is with the backend."},
			{Name: BridgeInputRequired, Doc: "The backend asked; the client was answered input_required and its next round trip is awaited."},
			{Name: BridgeAnswered, Doc: "The client's answer went back to the backend that asked."},
			{Name: BridgeCompleted, Doc: "The backend answered the call; the client has the result.", Terminal: true},
			{Name: BridgeLost, Doc: "The backend or the client went away mid-call: reported, never sent again.", Terminal: true, Alarm: true},
		},
		Events: []fsm.Event[BridgeEvent]{
			{Name: BridgeAsk, Doc: "The backend sent an elicitation, sampling or roots request."},
			{Name: BridgeAnswer, Doc: "The client called again with the answers."},
			{Name: BridgeComplete, Doc: "The backend answered the call."},
			{Name: BridgeLose, Doc: "The backend's connection ended, the client cancelled, or its answer did not come in time."},
		},
		Transitions: []tr{
			{Event: BridgeAsk, From: []BridgeState{BridgeSent, BridgeAnswered, BridgeInputRequired}, To: BridgeInputRequired},
			{Event: BridgeAnswer, From: []BridgeState{BridgeInputRequired}, To: BridgeAnswered},
			{Event: BridgeComplete, From: []BridgeState{BridgeSent, BridgeInputRequired, BridgeAnswered}, To: BridgeCompleted},
			{Event: BridgeLose, From: []BridgeState{BridgeSent, BridgeInputRequired, BridgeAnswered}, To: BridgeLost},
		},
	}
}

var bridgeMachines = sync.OnceValue(func() *fsm.Compiled[BridgeState, BridgeEvent, struct{}] {
	c, err := fsm.Compile(BridgeSpec())
	if err != nil {
		panic(err) // the spec is a constant: a test compiles it
	}
	return c
})

// bridgeOptions are a bridged call's machine's: no callbacks, since the
// front fires every event itself and logs what matters.
func bridgeOptions() fsm.Options[BridgeState, BridgeEvent, struct{}] {
	return fsm.Options[BridgeState, BridgeEvent, struct{}]{OnError: func(BridgeEvent, error) {}}
}

// inputWait bounds how long a bridged call waits for the client's next
// round trip: a person may take a while to answer an elicitation.
const inputWait = 5 * time.Minute

// bridge is one call bridged to a modern client.
type bridge struct {
	id     string
	server string
	m      *fsm.Machine[BridgeState, BridgeEvent, struct{}]
	asks   chan *ask       // the backend's requests, in order
	done   chan outcome    // the call's outcome, once
	cancel func()          // ends the call on the backend
	nextID atomic.Uint64   // input request ids
	expiry func() bool     // stops the timer of the wait for the client
	mu     sync.Mutex      // guards pending and expiry
	waitMu sync.Mutex      // one round trip of the client is served at a time
	ctx    context.Context // the call's, on the backend
	pend   map[string]*ask
}

// ask is one request of the backend, out to the client.
type ask struct {
	id     string
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

type outcome struct {
	res  *mcp.CallToolResult
	lost bool // the backend's connection ended during the call
	err  error
}

type bridgeKey struct{}

// bridges are the calls bridged now, by id (the requestState the client
// echoes).
type bridges struct {
	next atomic.Uint64
	mu   sync.Mutex
	by   map[string]*bridge
}

func (bs *bridges) add(b *bridge) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.by == nil {
		bs.by = map[string]*bridge{}
	}
	bs.by[b.id] = b
}

func (bs *bridges) get(id string) *bridge {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.by[id]
}

func (bs *bridges) remove(b *bridge) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.by, b.id)
}

// on counts the calls bridged on server, and returns one of them.
func (bs *bridges) on(server string) (one *bridge, n int) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, b := range bs.by {
		if b.server == server {
			one, n = b, n+1
		}
	}
	return one, n
}

// modern reports whether ss speaks 2026-07-28 or later: it takes a
// server's requests during a call only as input requests.
func modern(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p == nil || p.ProtocolVersion >= modernVersion
}

// bridged serves a round trip of a modern client's call of the tool
// served as name: the first starts call on the backend; a later one (its
// requestState names the bridge) carries the answers back.
func (f *Front) bridged(ctx context.Context, req *mcp.CallToolRequest, server string,
	call func(context.Context) outcome) (*mcp.CallToolResult, error) {
	if state := req.Params.RequestState; state != "" {
		b := f.bridges.get(state)
		if b == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"requestState %q names no call in progress in mcpfsm: it completed, was lost or waited more than %v for this answer; call the tool again",
				state, inputWait)}
		}
		if err := b.deliver(ctx, req.Params.InputResponses); err != nil {
			return nil, err
		}
		return f.await(ctx, b)
	}
	b := &bridge{id: fmt.Sprintf("mcpfsm-bridge-%d", f.bridges.next.Add(1)), server: server,
		asks: make(chan *ask, 16), done: make(chan outcome, 1), pend: map[string]*ask{}}
	m, err := bridgeMachines().New(bridgeOptions())
	if err != nil {
		return nil, err
	}
	b.m = m
	// The call outlives this round trip: the client's next one carries
	// the answers.
	cctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), bridgeKey{}, b))
	b.ctx, b.cancel = cctx, cancel
	f.bridges.add(b)
	go func() { b.done <- call(cctx) }()
	return f.await(ctx, b)
}

// await waits for what comes first of b: a request of the backend (the
// client gets it as an input request), or the call's outcome.
func (f *Front) await(ctx context.Context, b *bridge) (*mcp.CallToolResult, error) {
	b.waitMu.Lock()
	defer b.waitMu.Unlock()
	select {
	case a := <-b.asks:
		asks := []*ask{a}
		for more := true; more; {
			select {
			case a := <-b.asks:
				asks = append(asks, a)
			default:
				more = false
			}
		}
		res := &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: b.id}
		b.mu.Lock()
		for _, a := range asks {
			b.pend[a.id] = a
			res.InputRequests[a.id] = a.req
		}
		b.stopExpiry()
		b.expiry = f.opts.Clock.AfterFunc(inputWait, func() { f.lose(b, "the client's answer did not come in time") }).Stop
		b.mu.Unlock()
		f.fire(b, BridgeAsk)
		return res, nil
	case o := <-b.done:
		f.finish(b, o)
		return o.res, o.err
	case <-ctx.Done():
		f.lose(b, "the client cancelled the call")
		return nil, ctx.Err()
	}
}

// finish ends b with the call's outcome: completed, or lost when the
// backend went away under it.
func (f *Front) finish(b *bridge, o outcome) {
	b.mu.Lock()
	b.stopExpiry()
	b.mu.Unlock()
	f.bridges.remove(b)
	b.cancel()
	ev := BridgeComplete
	if o.lost {
		ev = BridgeLose
		f.opts.Logger.Warn("bridged call lost: the server's connection ended during it; it is not sent again",
			"server", b.server, "request_state", b.id)
	}
	f.fire(b, ev)
}

// lose ends b as lost: the call is cancelled on the backend, and a
// client that calls again with b's requestState is told the call is gone.
func (f *Front) lose(b *bridge, why string) {
	if f.bridges.get(b.id) == nil {
		return
	}
	f.bridges.remove(b)
	b.mu.Lock()
	b.stopExpiry()
	b.mu.Unlock()
	b.cancel()
	f.opts.Logger.Warn("bridged call lost: "+why+"; it is not sent again", "server", b.server, "request_state", b.id)
	f.fire(b, BridgeLose)
}

func (f *Front) fire(b *bridge, ev BridgeEvent) {
	if err := b.m.Fire(context.Background(), ev); err != nil {
		f.opts.Logger.Debug("bridged call: "+err.Error(), "server", b.server)
	}
}

// stopExpiry stops the wait for the client; b.mu is held.
func (b *bridge) stopExpiry() {
	if b.expiry != nil {
		b.expiry()
		b.expiry = nil
	}
}

// deliver hands the client's answers to the backend's requests waiting
// for them.
func (b *bridge) deliver(ctx context.Context, answers mcp.InputResponseMap) error {
	b.mu.Lock()
	var missing []string
	for id, a := range b.pend {
		r, ok := answers[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		a.answer <- r // buffered: the backend's handler may have gone
		delete(b.pend, id)
	}
	b.stopExpiry()
	b.mu.Unlock()
	if len(missing) > 0 {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"inputResponses: no answer to the input requests %q of requestState %q; call again with them", missing, b.id)}
	}
	if b.m.State() == BridgeInputRequired {
		_ = b.m.Fire(ctx, BridgeAnswer)
	}
	return nil
}

// bridgeFor is the bridged call a request of server belongs to: the one
// its context carries (a backend on 2026-07-28 asks in its call's
// result, and the SDK's client answers under the call's context), or
// else the only call of server's in flight when it is a bridged one. It
// returns nil for a request of a classic session's call, and an error
// matching [ErrNoPeer] when calls of several clients are in flight
// there and nothing tells which one the request is for.
func (f *Front) bridgeFor(ctx context.Context, server string) (*bridge, error) {
	if b, ok := ctx.Value(bridgeKey{}).(*bridge); ok && f.bridges.get(b.id) != nil {
		return b, nil
	}
	b, n := f.bridges.on(server)
	if n == 0 {
		return nil, nil
	}
	classic := 0
	for _, ss := range f.connected() {
		if !modern(ss) && f.requestContext(ss, server) != nil {
			classic++
		}
	}
	if n+classic > 1 {
		return nil, fmt.Errorf("%w: %d calls of clients of mcpfsm are in flight on server %q, and it cannot tell which one this request is for",
			ErrNoPeer, n+classic, server)
	}
	return b, nil
}

// askClient sends the backend's request req to the client of b, in the
// result of its current round trip, and returns the client's answer.
func (f *Front) askClient(ctx context.Context, b *bridge, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{id: fmt.Sprintf("r%d", b.nextID.Add(1)), req: req, answer: make(chan mcp.InputResponse, 1)}
	select {
	case b.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.ctx.Done():
		return nil, fmt.Errorf("the call this request belongs to ended")
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.ctx.Done():
		return nil, fmt.Errorf("the call this request belongs to ended")
	}
}
