package conn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// What a supervisor reports of its connection machine: each Transition to
// OnTransition and Watch, the Status snapshot, and the one log line of
// each transition.

// Transition is one step of the connection machine, as delivered to
// Config.OnTransition.
type Transition struct {
	Server   string
	From, To State
	Event    Event
	// When is the condition (the When of [Table]) of the guard that
	// chose the step among the outcomes of its event; empty for an
	// unguarded transition.
	When        string
	At          time.Time     // on the supervisor's clock
	Attempt     int           // reconnect attempt: 0 initial, n of MaxAttempts after a failure or loss
	MaxAttempts int           // the policy's MaxAttempts where Attempt counts against it
	Delay       time.Duration // backoff before the next attempt (backoff states only)
	// Err is why the step happened, when it reports a failure: a
	// *FailedError (the server did not come up), a *LostError (an
	// established connection dropped) or an *AuthError (the server refused
	// authorization).
	Err        error
	Generation uint64 // the generation the step concerns
	// Protocol is the MCP protocol version the generation negotiated, on
	// the transition into established; empty otherwise.
	Protocol string
	// Dropped is how many transitions a [Supervisor.Watch] channel lost
	// right before this one because its reader fell behind; always 0
	// for OnTransition.
	Dropped int
}

// TraceExtra is what a step of a trace of the connection machine records
// beyond the step itself: the [trace.Step.Extra] of [Transition.TraceStep].
type TraceExtra struct {
	Attempt    int    `json:"attempt,omitempty"`
	Delay      string `json:"delay,omitempty"` // a time.Duration's String
	Generation uint64 `json:"generation,omitempty"`
	Cause      string `json:"cause,omitempty"` // Err's text, with secrets redacted
}

// TraceStep returns t as a step of an fsm trace (package fsm/trace), the
// machine named by the server, which trace.Check holds against [Table].
func (t Transition) TraceStep() trace.Step {
	x := TraceExtra{Attempt: t.Attempt, Generation: t.Generation}
	if t.Delay > 0 {
		x.Delay = t.Delay.String()
	}
	if t.Err != nil {
		x.Cause = redact.Line(t.Err.Error())
	}
	extra, _ := json.Marshal(x) // strings and numbers: it cannot fail
	if string(extra) == "{}" {
		extra = nil
	}
	return trace.Step{
		Time: t.At.UTC().Format(time.RFC3339Nano), Machine: t.Server,
		From: string(t.From), Event: string(t.Event), When: t.When, To: string(t.To),
		Extra: extra,
	}
}

// Status is a snapshot of a [Supervisor].
type Status struct {
	Server      string
	State       State
	Attempt     int           // as in Transition
	MaxAttempts int           // the policy's MaxAttempts
	NextRetry   time.Time     // when the next attempt starts; zero unless backing off
	LastErr     error         // the most recent failure or loss, if any
	Generation  uint64        // the latest generation started
	Tools       []string      // public names of the registered tools, sorted
	HiddenTools int           // tools of the last listing that Config.Filter left out
	Since       time.Time     // when the current state was entered
	Delay       time.Duration // the current backoff delay, if backing off
	// Protocol is the MCP protocol version the latest established
	// generation negotiated ("2026-07-28", "2025-11-25", ...); empty until
	// one is established.
	Protocol string
}

// recoverHint is the manual recovery every terminal failure message names.
const recoverHint = "fix the server, then reload its configuration or restart the host"

// observe is the machine's observer: it records the transition, logs it
// with a message derived from the target state, and reports it to
// OnTransition. It runs on the loop, so transitions are delivered in order
// and never concurrently.
func (s *Supervisor) observe(st fsm.Step[State, Event, Payload]) {
	p := st.Data
	if p.Generation == 0 {
		// Steps that concern no failed or lost generation (a retry
		// starting, disposal) concern the newest one.
		p.Generation = s.genSeq
	}
	now := s.clk.Now()
	t := Transition{
		Server: s.cfg.Name, From: st.From, To: st.To, Event: st.Event, When: st.When, At: now,
		Attempt: p.Attempt, MaxAttempts: p.MaxAttempts, Delay: p.Delay, Err: p.Err, Generation: p.Generation,
		Protocol: p.Protocol,
	}
	s.mu.Lock()
	s.status.State = st.To
	s.status.Attempt = p.Attempt
	s.status.Since = now
	s.status.Delay, s.status.NextRetry = 0, time.Time{}
	if s.retry != nil {
		s.status.Delay, s.status.NextRetry = t.Delay, now.Add(t.Delay)
	}
	if p.Err != nil {
		s.status.LastErr = p.Err
	}
	if p.Protocol != "" {
		s.status.Protocol = p.Protocol
	}
	s.status.Generation = s.genSeq
	s.mu.Unlock()
	s.logTransition(t)
	s.gate.holds.broadcast()
	if s.cfg.OnTransition != nil {
		s.cfg.OnTransition(t)
	}
	s.watch.deliver(t)
}

// logTransition writes the one log line of a transition, at the target
// state's level, with the message its say function builds from the
// state's phrase; so "connection failed" and "connection lost" follow from
// the state and cannot be mixed up. A failure or loss ends the message
// with its cause ("; cause: ..."), which says what the server did, so an
// operator reading only messages learns why.
func (s *Supervisor) logTransition(t Transition) {
	f := t.To.facts()
	ctx := context.Background()
	if !s.cfg.Logger.Enabled(ctx, f.level) {
		return // nothing below is worth building for a line nobody reads
	}
	msg, extra := f.phrase, []any(nil)
	if f.say != nil {
		msg, extra = f.say(f.phrase, t, s.cfg.CloseTimeout)
	}
	attrs := append([]any{"server", t.Server, "state", string(t.To), "from", string(t.From), "event", string(t.Event),
		"generation", t.Generation}, extra...)
	if t.Protocol != "" {
		attrs = append(attrs, "protocol", t.Protocol)
	}
	if t.Err != nil {
		msg += "; cause: " + causeText(t.Err)
		attrs = append(attrs, "err", t.Err)
	}
	s.cfg.Logger.Log(ctx, f.level, msg, attrs...)
}

// causeText is what a transition's error says beyond its state's phrase:
// the cause inside a *FailedError or *LostError.
func causeText(err error) string {
	var fe *FailedError
	var le *LostError
	switch {
	case errors.As(err, &fe) && fe.Err != nil:
		return fe.Err.Error()
	case errors.As(err, &le):
		if le.Err == nil {
			return "the server closed the connection"
		}
		return le.Err.Error()
	}
	return err.Error()
}

// The log lines of the states that say more than their phrase; the states
// list names which state uses which.

func sayBackoff(phrase string, t Transition, _ time.Duration) (string, []any) {
	return fmt.Sprintf("%s in %v (attempt %d/%d)", phrase, t.Delay, t.Attempt, t.MaxAttempts),
		[]any{"attempt", t.Attempt, "max_attempts", t.MaxAttempts, "delay", t.Delay}
}

func sayConnected(_ string, t Transition, _ time.Duration) (string, []any) {
	if t.Attempt == 0 {
		return "connected and registered tools", nil
	}
	return fmt.Sprintf("reconnected and re-synced tools (attempt %d/%d)", t.Attempt, t.MaxAttempts),
		[]any{"attempt", t.Attempt, "max_attempts", t.MaxAttempts}
}

func sayExhausted(phrase string, t Transition, _ time.Duration) (string, []any) {
	if t.Delay > 0 { // a policy with a ProbeInterval
		return fmt.Sprintf("%s after %d consecutive failed reconnect attempts; tools unregistered; probing again in %v; %s",
			phrase, t.MaxAttempts, t.Delay, recoverHint), []any{"max_attempts", t.MaxAttempts, "delay", t.Delay}
	}
	return fmt.Sprintf("%s after %d consecutive failed reconnect attempts; tools unregistered; %s", phrase, t.MaxAttempts, recoverHint),
		[]any{"max_attempts", t.MaxAttempts}
}

func sayFailedDisabled(phrase string, _ Transition, _ time.Duration) (string, []any) {
	return phrase + "; no tools were registered; " + recoverHint, nil
}

func sayLostDisabled(phrase string, _ Transition, _ time.Duration) (string, []any) {
	return phrase + "; registered tools will fail until you " + recoverHint, nil
}

func sayFailedPermanent(phrase string, t Transition, _ time.Duration) (string, []any) {
	fix := "fix the server's configuration"
	var pe *PermanentError
	if errors.As(t.Err, &pe) {
		fix = pe.Fix
	}
	return phrase + ": " + fix + "; tools unregistered; then call Reconnect, reload its configuration or restart the host",
		[]any{"fix", fix}
}

func sayHalted(phrase string, _ Transition, closeTimeout time.Duration) (string, []any) {
	return fmt.Sprintf("%s: it did not exit within CloseTimeout (%v); not reconnecting, to avoid two server processes at once; %s",
		phrase, closeTimeout, recoverHint), nil
}

func sayAuthRefused(phrase string, _ Transition, _ time.Duration) (string, []any) {
	return phrase + "; not retrying: fix the credentials the server is given (its headers, or sign in again), then " + recoverHint, nil
}

// sayNeedsAuthorization says how to sign in, as the OAuth handler put it.
func sayNeedsAuthorization(phrase string, t Transition, _ time.Duration) (string, []any) {
	var ae *AuthError
	if errors.As(t.Err, &ae) && ae.SignIn != "" {
		return phrase + "; waiting for a sign-in, not retrying until then: " + ae.SignIn, nil
	}
	return phrase + "; waiting for a sign-in, not retrying until then", nil
}

// WatchBuffer is how many transitions a channel returned by
// [Supervisor.Watch] holds for a reader that has fallen behind. Once it is
// full, each new transition pushes out the oldest unread one.
const WatchBuffer = 64

// Watch returns a channel that receives every transition of the connection
// machine from now on, in order, each with the same fields OnTransition
// sees, plus Dropped.
//
// Unlike Config.OnTransition, a watcher never holds up the supervisor: the
// channel is buffered ([WatchBuffer] transitions), and when a reader falls
// so far behind that the buffer is full, the oldest unread transition is
// dropped to make room for the newest. The transition received right after
// a gap says how many were lost in it (Transition.Dropped), so a reader
// that cares re-reads [Supervisor.Status] then.
//
// The channel is closed once the supervisor is disposed, after the final
// transition into [Disposed], or when ctx ends; transitions already
// buffered can still be received after it is closed. A Watch made after
// disposal, or with a ctx that has already ended, returns a closed
// channel. A reader may stop reading at any time: an abandoned channel
// holds no goroutine.
//
// To follow a supervisor without missing a change, call Watch first and
// then read Status: a transition between the two is then both in the
// snapshot and on the channel, never in neither.
func (s *Supervisor) Watch(ctx context.Context) <-chan Transition {
	return s.watch.add(ctx)
}

// watchers is a supervisor's set of Watch channels. The loop is their only
// sender, and sends and closes happen under mu, so a channel is never sent
// on after it is closed.
type watchers struct {
	mu       sync.Mutex
	set      map[*watcher]struct{}
	disposed bool // the disposed transition was delivered: no new watchers
}

type watcher struct {
	ch      chan Transition
	stop    func() bool  // unregisters the ctx callback
	scratch []Transition // reused when the buffer overflows
}

func (ws *watchers) add(ctx context.Context) <-chan Transition {
	w := &watcher{ch: make(chan Transition, WatchBuffer)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.disposed || ctx.Err() != nil {
		close(w.ch)
		return w.ch
	}
	if ws.set == nil {
		ws.set = map[*watcher]struct{}{}
	}
	ws.set[w] = struct{}{}
	// If ctx ends at once, the callback waits for mu, so it finds w.
	w.stop = context.AfterFunc(ctx, func() { ws.remove(w) })
	return w.ch
}

func (ws *watchers) remove(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if _, ok := ws.set[w]; ok {
		delete(ws.set, w)
		close(w.ch)
	}
}

// deliver hands t to every watcher without blocking, and closes every
// channel after the disposed transition. It runs on the loop, from the
// machine's observer.
func (ws *watchers) deliver(t Transition) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.set {
		w.send(t)
	}
	if t.To == Disposed {
		for w := range ws.set {
			w.stop() // if the callback already runs, it finds w gone
			close(w.ch)
		}
		ws.set = nil
		ws.disposed = true
	}
}

// send queues t. When the buffer is full it takes back what the reader has
// not read, drops the oldest, adds the dropped count (and whatever that
// one carried) to the transition that now comes first, and queues the
// rest again. The re-sends cannot block: only the loop sends, and the
// reader can only make more room.
func (w *watcher) send(t Transition) {
	select {
	case w.ch <- t:
		return
	default:
	}
	buf := w.scratch[:0]
drain:
	for {
		select {
		case x := <-w.ch:
			buf = append(buf, x)
		default:
			break drain
		}
	}
	buf = append(buf, t)
	full := buf
	if over := len(buf) - cap(w.ch); over > 0 {
		lost := 0
		for _, x := range buf[:over] {
			lost += x.Dropped + 1
		}
		buf = buf[over:]
		buf[0].Dropped += lost
	}
	for _, x := range buf {
		w.ch <- x
	}
	clear(full) // hold no references to the transitions' errors
	w.scratch = full[:0]
}
