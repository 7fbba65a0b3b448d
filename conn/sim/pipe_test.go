package sim

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A link is the simulated connection of one process: two queues of
// JSON-RPC messages, one each way, that close together, as a process's
// pipes do when it exits. A message is handed over as the value the
// writer made, not encoded and decoded again: the SDK neither keeps nor
// changes a message once it is written or read (the race detector would
// see it in the simulator's own tests), and the round trip through JSON
// would cost a third of a run. Every operation is on channels made
// in the run's bubble or under a mutex held for a few instructions, so a
// goroutine that waits on a link is durably blocked (testing/synctest)
// and simulated time goes on around it. Writes never block: a queue has
// no bound, and a server that stops reading is a hang of the process,
// not a full pipe.
type link struct {
	mu     sync.Mutex
	closed bool
	down   chan struct{} // closed with the link
	toSrv  queue         // client -> server
	toCli  queue         // server -> client
}

type queue struct {
	msgs  []jsonrpc.Message
	ready chan struct{} // a message was queued (buffered 1)
}

func newLink() *link {
	return &link{down: make(chan struct{}),
		toSrv: queue{ready: make(chan struct{}, 1)},
		toCli: queue{ready: make(chan struct{}, 1)}}
}

// errLinkDown is what a write to a closed link returns: the pipe broke.
var errLinkDown = errors.New("sim: the connection is closed (the process's pipes are gone)")

// cut closes the link: both ends read EOF once the queue in front of them
// is drained (what the process wrote before it died is still read).
func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.down)
	}
}

func (l *link) push(q *queue, msg jsonrpc.Message) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errLinkDown
	}
	q.msgs = append(q.msgs, msg)
	l.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return nil
}

func (l *link) pop(ctx context.Context, q *queue) (jsonrpc.Message, error) {
	for {
		l.mu.Lock()
		if len(q.msgs) > 0 {
			msg := q.msgs[0]
			q.msgs[0] = nil
			q.msgs = q.msgs[1:]
			l.mu.Unlock()
			return msg, nil
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return nil, io.EOF
		}
		select {
		case <-q.ready:
		case <-l.down:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// end is one side of a link as an mcp.Connection.
type end struct {
	l      *link
	in     *queue
	out    *queue
	closer func() error // what Close does besides cutting the link
	once   sync.Once
	err    error
}

func (e *end) Read(ctx context.Context) (jsonrpc.Message, error) { return e.l.pop(ctx, e.in) }

func (e *end) Write(_ context.Context, msg jsonrpc.Message) error { return e.l.push(e.out, msg) }

// Close cuts the link (a client that closes its pipes; a server that
// exits) and returns the error of the closer, once.
func (e *end) Close() error {
	e.once.Do(func() {
		e.l.cut()
		if e.closer != nil {
			e.err = e.closer()
		}
	})
	return e.err
}

func (e *end) SessionID() string { return "" }
