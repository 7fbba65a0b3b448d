package conn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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
