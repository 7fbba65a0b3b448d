// Package tasks keeps the tasks of the MCP tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663) that a proxy runs for its
// clients: a tool call that returns a task handle at once, runs on,
// and whose status and outcome the client fetches later with tasks/get,
// answers input requests of with tasks/update, or cancels with
// tasks/cancel.
//
// A [Store] holds each task for its owner alone (another owner's task
// is as unknown as one that never was), bounded in count (in all and
// per owner), in the bytes of the outcomes it keeps, and in time: a
// task lives Options.TTL from its creation, then is removed, and its
// call cancelled if it still runs. Nothing here runs a call: its runner
// reports to the store ([Store.Finish], [Store.Ask]) and the store
// cancels it ([Store.Cancel], expiry, [Store.Forget], [Store.Close]).
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Status is a task's status, as the extension names it.
type Status string

// The statuses of a task. Completed, Failed and Cancelled are terminal.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Defaults of [Options].
const (
	DefaultTTL            = 30 * time.Minute
	DefaultPollInterval   = time.Second
	DefaultMaxTasks       = 1024
	DefaultMaxPerOwner    = 64
	DefaultMaxBytes       = 64 << 20
	DefaultMaxResultBytes = 8 << 20
)

// Options bound a [Store]. Zero fields take their defaults.
type Options struct {
	// Clock times the tasks' lives. Nil means the real clock.
	Clock clock.Clock
	// TTL is how long a task is kept from its creation (its ttlMs); a
	// call still running then is cancelled.
	TTL time.Duration
	// PollInterval is the interval between tasks/get the client is told
	// to keep (its pollIntervalMs).
	PollInterval time.Duration
	// MaxTasks bounds the tasks kept in all; MaxPerOwner, those of one
	// owner.
	MaxTasks, MaxPerOwner int
	// MaxBytes bounds the bytes of the results kept in all;
	// MaxResultBytes, that of one (a larger one fails its task). A
	// failed task's error is kept in at most 1 KiB.
	MaxBytes, MaxResultBytes int64
}

// maxErrorBytes bounds the error a failed task keeps: past it, its data
// is dropped and its message cut.
const maxErrorBytes = 1024

// ErrFull: the store holds as many tasks as its bounds allow, in all or
// for the owner; the call is not made a task.
var ErrFull = errors.New("too many tasks kept")

// Store is the tasks of every owner. Its methods are safe for
// concurrent use.
type Store struct {
	o Options

	mu      sync.Mutex
	by      map[string]*task
	owned   map[string]int // owner -> tasks kept
	bytes   int64          // bytes of the outcomes kept
	closed  bool
	changed chan struct{} // closed and replaced at every change (for tests)
}

// task is one task.
type task struct {
	id, owner        string
	status           Status
	message          string // statusMessage, if any
	created, updated time.Time
	cancel           context.CancelFunc // ends its call; nil once terminal
	expiry           *clock.Timer

	result  json.RawMessage // the outcome of a completed task
	err     *jsonrpc.Error  // that of a failed one
	size    int64           // bytes of result kept
	pending mcp.InputRequestMap
	answers mcp.InputResponseMap
	state   string                    // the requestState the answers go on with
	ready   chan mcp.InputResponseMap // the answers, once every pending request has one
}

// View is a task as its owner sees it.
type View struct {
	ID            string
	Status        Status
	Message       string
	Created       time.Time
	Updated       time.Time
	TTL           time.Duration
	PollInterval  time.Duration
	Result        json.RawMessage     // a completed task's result
	Error         *jsonrpc.Error      // a failed task's error
	InputRequests mcp.InputRequestMap // an input_required task's requests not yet answered
}

// New returns an empty store bounded by o.
func New(o Options) *Store {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = DefaultMaxTasks
	}
	if o.MaxPerOwner <= 0 {
		o.MaxPerOwner = DefaultMaxPerOwner
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	return &Store{o: o, by: map[string]*task{}, owned: map[string]int{}, changed: make(chan struct{})}
}

// Create makes a working task of owner's whose call cancel ends. It
// fails with ErrFull past the store's bounds, and once the store is
// closed.
func (s *Store) Create(owner string, cancel context.CancelFunc) (View, error) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	now := s.o.Clock.Now()
	t := &task{id: hex.EncodeToString(b[:]), owner: owner, status: Working, created: now, updated: now, cancel: cancel}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return View{}, fmt.Errorf("%w: the store is closed", ErrFull)
	}
	if len(s.by) >= s.o.MaxTasks {
		return View{}, fmt.Errorf("%w: %d in all, the bound", ErrFull, len(s.by))
	}
	if s.owned[owner] >= s.o.MaxPerOwner {
		return View{}, fmt.Errorf("%w: %d of this caller's, the bound", ErrFull, s.owned[owner])
	}
	s.by[t.id] = t
	s.owned[owner]++
	t.expiry = s.o.Clock.AfterFunc(s.o.TTL, func() { s.expire(t) })
	s.notify()
	return s.view(t), nil
}

// expire removes t, cancelling its call if it still runs.
func (s *Store) expire(t *task) {
	s.mu.Lock()
	cancel := s.remove(t)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// remove forgets t and returns its call's cancel if it still runs;
// s.mu is held.
func (s *Store) remove(t *task) context.CancelFunc {
	if s.by[t.id] != t {
		return nil
	}
	delete(s.by, t.id)
	if s.owned[t.owner]--; s.owned[t.owner] <= 0 {
		delete(s.owned, t.owner)
	}
	s.bytes -= t.size
	t.expiry.Stop()
	cancel := t.cancel
	t.cancel = nil
	s.notify()
	return cancel
}

// lookup is owner's task id; s.mu is held.
func (s *Store) lookup(owner, id string) (*task, bool) {
	t, ok := s.by[id]
	if !ok || t.owner != owner {
		return nil, false
	}
	return t, true
}

// Get returns owner's task id.
func (s *Store) Get(owner, id string) (View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.lookup(owner, id)
	if !ok {
		return View{}, false
	}
	return s.view(t), true
}

// view is t as seen; s.mu is held.
func (s *Store) view(t *task) View {
	v := View{ID: t.id, Status: t.status, Message: t.message, Created: t.created, Updated: t.updated,
		TTL: s.o.TTL, PollInterval: s.o.PollInterval, Result: t.result, Error: t.err}
	if t.status == InputRequired {
		v.InputRequests = mcp.InputRequestMap{}
		for k, r := range t.pending {
			if _, answered := t.answers[k]; !answered {
				v.InputRequests[k] = r
			}
		}
	}
	return v
}

// Finish records the outcome of task id's call: its result, or the error
// it ended with (a JSON-RPC error as it came, any other as an internal
// error). A task already terminal (cancelled) or gone keeps what it has.
func (s *Store) Finish(id string, res mcp.Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.by[id]
	if !ok || t.status.Terminal() {
		return
	}
	t.cancel = nil // the call is over
	t.pending, t.answers, t.ready = nil, nil, nil
	t.updated = s.o.Clock.Now()
	if err == nil {
		raw, merr := json.Marshal(res)
		switch {
		case merr != nil:
			err = fmt.Errorf("the result cannot be encoded: %v", merr)
		case int64(len(raw)) > s.o.MaxResultBytes:
			err = fmt.Errorf("the result has %d bytes, more than the %d a task keeps", len(raw), s.o.MaxResultBytes)
		case s.bytes+int64(len(raw)) > s.o.MaxBytes:
			err = fmt.Errorf("the result has %d bytes, more than the tasks' store has room for now (%d of %d kept)", len(raw), s.bytes, s.o.MaxBytes)
		default:
			t.status, t.result, t.size = Completed, raw, int64(len(raw))
			s.bytes += t.size
			s.notify()
			return
		}
	}
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	// An error is kept in at most maxErrorBytes, outside MaxBytes (which
	// bounds the results): the task count bounds them.
	cp := *wire
	if len(cp.Message)+len(cp.Data) > maxErrorBytes {
		cp.Data = nil
		cp.Message = cp.Message[:min(len(cp.Message), maxErrorBytes)]
	}
	t.status, t.err = Failed, &cp
	s.notify()
}

// Ask records that task id's call awaits the answers to reqs, with which
// it goes on under state. The returned channel gets the answers once
// [Store.Answer] has one for every request; it is nil if the task is gone
// or terminal.
func (s *Store) Ask(id string, reqs mcp.InputRequestMap, state string) <-chan mcp.InputResponseMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.by[id]
	if !ok || t.status.Terminal() {
		return nil
	}
	t.status, t.updated = InputRequired, s.o.Clock.Now()
	t.pending, t.answers, t.state = reqs, mcp.InputResponseMap{}, state
	t.ready = make(chan mcp.InputResponseMap, 1)
	s.notify()
	return t.ready
}

// State is the requestState task id's answers go on with.
func (s *Store) State(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.by[id]; ok {
		return t.state
	}
	return ""
}

// Awaits reports whether owner's task id awaits an answer under key.
func (s *Store) Awaits(owner, id, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.lookup(owner, id)
	if !ok || t.status != InputRequired {
		return false
	}
	_, asked := t.pending[key]
	return asked
}

// Answer takes owner's answers to the input requests of task id: those
// of requests it awaits are kept (any other key is ignored); once every
// request has one, the task is working again and its call gets them. It
// reports false if owner has no such task.
func (s *Store) Answer(owner, id string, answers mcp.InputResponseMap) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.lookup(owner, id)
	if !ok {
		return false
	}
	if t.status != InputRequired {
		return true
	}
	for k, r := range answers {
		if _, asked := t.pending[k]; asked {
			t.answers[k] = r
		}
	}
	if len(t.answers) < len(t.pending) {
		return true
	}
	t.ready <- t.answers // buffered, sent once: the status leaves InputRequired
	t.status, t.updated = Working, s.o.Clock.Now()
	t.pending, t.answers, t.ready = nil, nil, nil
	s.notify()
	return true
}

// Cancel cancels owner's task id: a task not yet terminal becomes
// cancelled and its call is cancelled; a terminal one stays as it is. It
// reports false if owner has no such task.
func (s *Store) Cancel(owner, id string) bool {
	s.mu.Lock()
	t, ok := s.lookup(owner, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	var cancel context.CancelFunc
	if !t.status.Terminal() {
		t.status, t.updated, t.message = Cancelled, s.o.Clock.Now(), "cancelled by the client"
		t.pending, t.answers, t.ready = nil, nil, nil
		cancel, t.cancel = t.cancel, nil
		s.notify()
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return true
}

// Forget removes every task of owner, cancelling the calls that run (an
// owner that ended: no one else can fetch them).
func (s *Store) Forget(owner string) {
	s.mu.Lock()
	var cancels []context.CancelFunc
	for _, t := range s.by {
		if t.owner == owner {
			if c := s.remove(t); c != nil {
				cancels = append(cancels, c)
			}
		}
	}
	s.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// Close removes every task, cancelling the calls that run; Create fails
// after it.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	var cancels []context.CancelFunc
	for _, t := range s.by {
		if c := s.remove(t); c != nil {
			cancels = append(cancels, c)
		}
	}
	s.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// Len is how many tasks the store keeps, and the bytes of their outcomes.
func (s *Store) Len() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.by), s.bytes
}

// Changed returns a channel closed at the store's next change.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// notify closes the change channel; s.mu is held.
func (s *Store) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}
