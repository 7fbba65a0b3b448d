package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A front client on protocol 2026-07-28 cannot be sent a request while
// the front serves one of its calls: the server asks in the call's
// result instead (input_required, multi round-trip requests, SEP-2322)
// and the client calls again with the answers. A backend does not know
// which era the front's client speaks, so the front bridges: the call
// (tools/call, prompts/get or resources/read) runs on the backend across
// the client's round trips, and each request the backend sends during it
// (elicitation, sampling, roots) becomes an input request of the result
// the client gets; its answer, from the client's next round trip, goes
// back to the backend that asked.
//
// A bridge belongs to one client and one call: its requestState is a
// random 128-bit value kept by that client alone, with the method and
// name it was made for, so another client (or another call of the same
// one) cannot name it. Each bridged call is a small machine,
// bridgeSpec: a backend lost while its request is out ends the call as
// lost, reported to the client; it is never sent again.

// bridgeState is a state of a bridged call.
type bridgeState string

// bridgeEvent is an event of a bridged call.
type bridgeEvent string

// The states and events of bridgeSpec.
const (
	bridgeSent          bridgeState = "sent"
	bridgeInputRequired bridgeState = "input-required"
	bridgeAnswered      bridgeState = "answered"
	bridgeCompleted     bridgeState = "completed"
	bridgeLost          bridgeState = "lost"

	bridgeAsk      bridgeEvent = "ask"
	bridgeAnswer   bridgeEvent = "answer"
	bridgeComplete bridgeEvent = "complete"
	bridgeLose     bridgeEvent = "lose"
)

// bridgeSpec declares the life of a call bridged between a backend and a
// front client on protocol 2026-07-28.
func bridgeSpec() fsm.Spec[bridgeState, bridgeEvent, struct{}] {
	type tr = fsm.Transition[bridgeState, bridgeEvent, struct{}]
	return fsm.Spec[bridgeState, bridgeEvent, struct{}]{
		Name:    "bridged request",
		Initial: bridgeSent,
		States: []fsm.State[bridgeState]{
			{Name: bridgeSent, Doc: "The call is with the backend."},
			{Name: bridgeInputRequired, Doc: "The backend asked; the client was answered input_required and its next round trip is awaited."},
			{Name: bridgeAnswered, Doc: "The client's answer went back to the backend that asked."},
			{Name: bridgeCompleted, Doc: "The backend answered the call; the client has the result.", Terminal: true},
			{Name: bridgeLost, Doc: "The backend or the client went away mid-call: reported, never sent again.", Terminal: true, Alarm: true},
		},
		Events: []fsm.Event[bridgeEvent]{
			{Name: bridgeAsk, Doc: "The backend sent an elicitation, sampling or roots request."},
			{Name: bridgeAnswer, Doc: "The client called again with the answers."},
			{Name: bridgeComplete, Doc: "The backend answered the call."},
			{Name: bridgeLose, Doc: "The backend's connection ended, the client cancelled or ended, or its answer did not come in time."},
		},
		Transitions: []tr{
			{Event: bridgeAsk, From: []bridgeState{bridgeSent, bridgeAnswered, bridgeInputRequired}, To: bridgeInputRequired},
			{Event: bridgeAnswer, From: []bridgeState{bridgeInputRequired}, To: bridgeAnswered},
			{Event: bridgeComplete, From: []bridgeState{bridgeSent, bridgeInputRequired, bridgeAnswered}, To: bridgeCompleted},
			{Event: bridgeLose, From: []bridgeState{bridgeSent, bridgeInputRequired, bridgeAnswered}, To: bridgeLost},
		},
	}
}

var bridgeMachines = sync.OnceValue(func() *fsm.Compiled[bridgeState, bridgeEvent, struct{}] {
	c, err := fsm.Compile(bridgeSpec())
	if err != nil {
		panic(err) // the spec is a constant: a test compiles it
	}
	return c
})

// bridgeOptions are a bridged call's machine's: no callbacks, since the
// front fires every event itself and logs what matters.
func bridgeOptions() fsm.Options[bridgeState, bridgeEvent, struct{}] {
	return fsm.Options[bridgeState, bridgeEvent, struct{}]{OnError: func(bridgeEvent, error) {}}
}

// Bounds of the wait for a client's next round trip: a person may take a
// while to answer an elicitation, but a round the client abandons holds
// its backend call, and a shared backend serves every client.
const (
	inputWait       = 5 * time.Minute
	sharedInputWait = 30 * time.Second
)

// bridge is one call of a modern client, bridged to a backend.
type bridge struct {
	c      *client
	state  string // the requestState the client echoes
	method string // tools/call, prompts/get or resources/read
	name   string // the tool, prompt or resource the call is of
	m      *fsm.Machine[bridgeState, bridgeEvent, struct{}]
	asks   chan *ask    // the backend's requests, in order
	done   chan outcome // the call's outcome, once
	cancel func()       // ends the call on the backend
	ctx    context.Context
	nextID atomic.Uint64 // input request ids
	waitMu sync.Mutex    // one round trip of the client is served at a time

	mu     sync.Mutex // guards what follows
	pend   map[string]*ask
	expiry func() bool // stops the timer of the wait for the client
	server string      // the server that asked, once one did
	lost   bool        // the backend's connection ended during the call
}

// ask is one request of the backend, out to the client.
type ask struct {
	id     string
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

// outcome is what a call's client gets.
type outcome struct {
	res mcp.Result
	err error
}

type bridgeKey struct{}

// bridgeOf is the bridged call ctx runs under, or nil.
func bridgeOf(ctx context.Context) *bridge {
	b, _ := ctx.Value(bridgeKey{}).(*bridge)
	return b
}

// markLost records that the backend's connection ended during the call.
func (b *bridge) markLost() {
	b.mu.Lock()
	b.lost = true
	b.mu.Unlock()
}

// modern reports whether ss speaks 2026-07-28 or later: it takes a
// server's requests during a call only as input requests.
func modern(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p == nil || p.ProtocolVersion >= conn.StatelessProtocolVersion
}

// bridgeMiddleware bridges the calls of a modern client: a tools/call,
// prompts/get or resources/read runs on the backend across the client's
// round trips (see bridged); a classic client's goes on as it came.
func (c *client) bridgeMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if c.kind != subjectClient && (ss == nil || !modern(ss)) {
			return next(ctx, method, req)
		}
		var name, state string
		var answers mcp.InputResponseMap
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			name, state, answers = p.Name, p.RequestState, p.InputResponses
		case *mcp.GetPromptParams:
			name, state, answers = p.Name, p.RequestState, p.InputResponses
		case *mcp.ReadResourceParams:
			name, state, answers = p.URI, p.RequestState, p.InputResponses
		default:
			return next(ctx, method, req)
		}
		return c.bridged(ctx, method, name, state, answers, func(ctx context.Context) (mcp.Result, error) {
			return next(ctx, method, req)
		})
	}
}

// errNoBridge answers a round trip whose requestState names no call of
// this client's of method and name: it names nothing of any other call.
func errNoBridge(method, name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"requestState names no %s of %q of this client in progress in mcpfsm: it completed, was lost or waited too long for this answer; send the request again without requestState",
		method, name)}
}

// bridged serves a round trip of a modern client's call: the first
// starts call on the backend; a later one (its requestState names the
// bridge) carries the answers back.
func (c *client) bridged(ctx context.Context, method, name, state string, answers mcp.InputResponseMap,
	call func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if state != "" {
		c.mu.Lock()
		b := c.bridges[state]
		c.mu.Unlock()
		if b == nil || b.method != method || b.name != name {
			return nil, errNoBridge(method, name)
		}
		if err := b.deliver(ctx, answers); err != nil {
			return nil, err
		}
		return c.await(ctx, b)
	}
	m, err := bridgeMachines().New(bridgeOptions())
	if err != nil {
		return nil, err
	}
	b := &bridge{c: c, state: randomState(), method: method, name: name, m: m,
		asks: make(chan *ask, 16), done: make(chan outcome, 1), pend: map[string]*ask{}}
	// The call outlives this round trip: the client's next one carries
	// the answers.
	cctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), bridgeKey{}, b))
	b.ctx, b.cancel = cctx, cancel
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpfsm: the client ended"}
	}
	c.bridges[b.state] = b
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		res, err := call(cctx)
		b.done <- outcome{res: res, err: err}
	}()
	return c.await(ctx, b)
}

// randomState is a fresh requestState: 128 random bits.
func randomState() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "mcpfsm-" + hex.EncodeToString(b[:])
}

// inputResult is the input_required result of method: the requests the
// client is to answer, and the state it echoes with the answers.
// The SDK keeps the result's type unexported; its JSON decoding is the
// one way to set it.
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

// await waits for what comes first of b: a request of the backend (the
// client gets it as an input request), or the call's outcome.
func (c *client) await(ctx context.Context, b *bridge) (mcp.Result, error) {
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
		reqs := mcp.InputRequestMap{}
		b.mu.Lock()
		for _, a := range asks {
			b.pend[a.id] = a
			reqs[a.id] = a.req
		}
		b.stopExpiry()
		wait := inputWait
		if b.server != "" && !c.isolated(b.server) {
			wait = sharedInputWait // a shared backend's other clients wait too
		}
		b.expiry = c.f.opts.Clock.AfterFunc(wait, func() { c.lose(b, "the client's answer did not come in time") }).Stop
		b.mu.Unlock()
		c.fire(b, bridgeAsk)
		return inputResult(b.method, reqs, b.state), nil
	case o := <-b.done:
		c.finish(b)
		return o.res, o.err
	case <-ctx.Done():
		c.lose(b, "the client cancelled the call")
		return nil, ctx.Err()
	}
}

// forget removes b from c's bridges, and its call from c's calls in
// flight (the call may take a moment to end on the backend, but it is
// over for the client, and no request of the backend is its any more),
// and reports whether b was there.
func (c *client) forget(b *bridge) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bridges[b.state] != b {
		return false
	}
	delete(c.bridges, b.state)
	for server, calls := range c.calls {
		c.calls[server] = slices.DeleteFunc(calls, func(in *inflight) bool { return in.b == b })
		if len(c.calls[server]) == 0 {
			delete(c.calls, server)
		}
	}
	return true
}

// finish ends b with the call's outcome: completed, or lost when the
// backend went away under it.
func (c *client) finish(b *bridge) {
	b.mu.Lock()
	b.stopExpiry()
	lost := b.lost
	b.mu.Unlock()
	c.forget(b)
	b.cancel()
	ev := bridgeComplete
	if lost {
		ev = bridgeLose
		c.f.opts.Logger.Warn("bridged call lost: the server's connection ended during it; it is not sent again",
			"server", b.server, "method", b.method)
	}
	c.fire(b, ev)
}

// lose ends b as lost: the call is cancelled on the backend, and a
// client that calls again with b's requestState is told the call is gone.
func (c *client) lose(b *bridge, why string) {
	if !c.forget(b) {
		return
	}
	b.mu.Lock()
	b.stopExpiry()
	b.mu.Unlock()
	b.cancel()
	c.f.opts.Logger.Warn("bridged call lost: "+why+"; it is not sent again", "server", b.server, "method", b.method)
	c.fire(b, bridgeLose)
}

func (c *client) fire(b *bridge, ev bridgeEvent) {
	if err := b.m.Fire(context.Background(), ev); err != nil {
		c.f.opts.Logger.Debug("bridged call: "+err.Error(), "server", b.server)
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
		slices.Sort(missing)
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"inputResponses: no answer to the input requests %q of this call; send it again with them", missing)}
	}
	if b.m.State() == bridgeInputRequired {
		_ = b.m.Fire(ctx, bridgeAnswer)
	}
	return nil
}

// askClient sends the backend's request req to the client of b, in the
// result of its current round trip, and returns the client's answer.
func (b *bridge) askClient(ctx context.Context, server string, req mcp.InputRequest) (mcp.InputResponse, error) {
	b.mu.Lock()
	if b.server == "" {
		b.server = server
	}
	b.mu.Unlock()
	a := &ask{id: fmt.Sprintf("r%d", b.nextID.Add(1)), req: req, answer: make(chan mcp.InputResponse, 1)}
	select {
	case b.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.ctx.Done():
		return nil, errors.New("the call this request belongs to ended")
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.ctx.Done():
		return nil, errors.New("the call this request belongs to ended")
	}
}
