package metrics

import (
	"context"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"go.opentelemetry.io/otel/metric"
)

// pendingCap is how many calls a Metrics holds before it records them:
// the size of each of its two buffers (80 bytes a call).
const pendingCap = 256

// pendingCall is a tool call waiting to be recorded: what its attribute
// set is made of, and its duration in seconds.
type pendingCall struct {
	s       *serverCalls // the recorder of server, or nil
	server  string
	tool    string
	outcome conn.Outcome
	code    int64 // the JSON-RPC error code, when hasCode
	hasCode bool
	secs    float64
}

// pending holds the tool calls that ended but are not yet recorded into
// the histogram. A call only appends to a buffer; the buffer is recorded
// into the histogram, many calls in a row, at the next collection (a
// callback of the Meter, which the SDK runs before it reads the
// synchronous instruments), by a goroutine started when the buffer fills,
// or by Close. Two buffers bound its memory: one fills while the other is
// recorded, and a call that fills the first while the second is still
// being recorded records its buffer itself.
type pending struct {
	m *Metrics

	// draining is held by whoever records a buffer taken out of mu's
	// reach: the goroutine started on a full buffer, a collection, or
	// Close.
	// A collection waits on it, so it sees the calls such a goroutine
	// was still recording.
	draining sync.Mutex

	mu     sync.Mutex
	buf    []pendingCall // the buffer calls append to
	spare  []pendingCall // the other buffer, nil while it is being recorded
	direct bool          // after Close: record each call at once
}

func newPending(m *Metrics) *pending {
	return &pending{m: m, buf: make([]pendingCall, 0, pendingCap), spare: make([]pendingCall, 0, pendingCap)}
}

// add queues one call. It allocates nothing; it records at most one full
// buffer itself, and only when another is still being recorded.
func (p *pending) add(c *pendingCall) {
	p.mu.Lock()
	if p.direct {
		p.mu.Unlock()
		one := [1]pendingCall{*c}
		p.record(one[:])
		return
	}
	p.buf = append(p.buf, *c)
	if len(p.buf) < pendingCap {
		p.mu.Unlock()
		return
	}
	// Full. Holding draining means no other buffer is out, so spare is
	// free.
	if p.spare != nil && p.draining.TryLock() {
		full := p.take()
		p.mu.Unlock()
		go p.recordHeld(full)
		return
	}
	// A goroutine or a collection is recording the other buffer: record
	// this one here, which holds back the calls that end meanwhile, so
	// that memory stays bounded when calls outpace recording.
	p.record(p.buf)
	clear(p.buf)
	p.buf = p.buf[:0]
	p.mu.Unlock()
}

// take swaps the buffers and returns the one calls appended to; p.mu and
// p.draining are held.
func (p *pending) take() []pendingCall {
	full := p.buf
	p.buf, p.spare = p.spare, nil
	return full
}

// recordHeld records full, a buffer take returned, gives it back as the
// spare and releases p.draining.
func (p *pending) recordHeld(full []pendingCall) {
	p.record(full)
	clear(full) // keeps the names of past calls from staying alive
	p.mu.Lock()
	p.spare = full[:0]
	p.mu.Unlock()
	p.draining.Unlock()
}

// record records calls into the histogram. A call with the attributes of
// the one before it (calls of one tool that succeed, mostly) reuses its
// record options.
func (p *pending) record(calls []pendingCall) {
	ctx := context.Background()
	var opts []metric.RecordOption
	for i := range calls {
		c := &calls[i]
		if i == 0 || !c.sameSet(&calls[i-1]) {
			s := c.s
			if s == nil || s.server != c.server {
				s = p.m.callsOf(c.server)
			}
			opts = s.options(c)
		}
		p.m.calls.Record(ctx, c.secs, opts...)
	}
}

// sameSet reports whether c and d are recorded under one attribute set.
func (c *pendingCall) sameSet(d *pendingCall) bool {
	return c.server == d.server && c.tool == d.tool && c.outcome == d.outcome &&
		c.hasCode == d.hasCode && c.code == d.code
}

// flush records every call queued before it, including those of a buffer
// a goroutine is still recording, before it returns. With direct set, later
// calls are recorded at once.
func (p *pending) flush(direct bool) {
	p.draining.Lock()
	p.mu.Lock()
	p.direct = p.direct || direct
	if len(p.buf) == 0 {
		p.mu.Unlock()
		p.draining.Unlock()
		return
	}
	full := p.take()
	p.mu.Unlock()
	p.recordHeld(full)
}
