// Package audit writes an audit trail of what the clients of a front did:
// one JSON line per tool call, resource read and prompt get, with who
// asked, which server answered, the outcome and the duration, and never
// the arguments' or results' values unless asked to.
//
// Records are written off the call path: [Log.Record] never blocks. A
// bounded queue holds records for the writer; when it is full a record is
// dropped and counted ([Log.Dropped]), so a slow disk never slows a call.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of record.
const (
	KindTool     = "tool"
	KindResource = "resource"
	KindPrompt   = "prompt"
)

// Outcomes of a request refused by a server's per-caller policy (package
// authz), beside conn's Outcome words.
const (
	// OutcomeDenied: the caller lacks a scope the server's rules ask for.
	OutcomeDenied = "denied"
	// OutcomeRateLimited: the caller reached the server's rateLimit.
	OutcomeRateLimited = "rate-limited"
)

// Record is one line of the trail.
type Record struct {
	Time time.Time `json:"time"`
	// Session is the front session's id (Mcp-Session-Id over HTTP; empty
	// over stdio).
	Session string `json:"session,omitempty"`
	// Subject is who the session authenticated as, each kind in its own
	// namespace: "token" for the static bearer token (the operator),
	// "oauth:sub:SUB" for an OAuth token's subject, "oauth:client:ID" for
	// a token naming only its client; empty without a credential.
	Subject string `json:"subject,omitempty"`
	Server  string `json:"server"`
	Kind    string `json:"kind"` // KindTool, KindResource or KindPrompt
	// Name is the tool's or prompt's public name, or the resource's URI
	// as the client asked for it.
	Name string `json:"name"`
	// Outcome is one of conn's Outcome words (ok, tool-error,
	// unavailable, timeout, canceled, error), or OutcomeDenied or
	// OutcomeRateLimited for a request the server's per-caller policy
	// refused before it reached the server.
	Outcome  string  `json:"outcome"`
	Duration float64 `json:"durationMs"`
	// ArgBytes is the size of the arguments as the client sent them.
	ArgBytes int `json:"argBytes"`
	// Args are the arguments themselves, only with Options.Args.
	Args json.RawMessage `json:"args,omitempty"`
	// MaxResultBytes is the limit of a tool result's size (zero for
	// none), ResultBytes its size, and CutBytes what the front cut of it.
	MaxResultBytes int `json:"maxResultBytes,omitempty"`
	ResultBytes    int `json:"resultBytes,omitempty"`
	CutBytes       int `json:"cutBytes,omitempty"`
}

// Options configure a [Log].
type Options struct {
	// Queue is how many records may wait for the writer; 0 means
	// DefaultQueue.
	Queue int
	// Args keeps the arguments' values in the records (flag
	// -audit-args). Off, a record holds only their size.
	Args bool
	// Redact, when set, is applied to every line before it is written: a
	// registry of the host's secret values, hiding them by value (a
	// configured token passed as an argument, a resource URI's query).
	Redact func(string) string
}

// DefaultQueue is the queue length of a Log when Options.Queue is 0.
const DefaultQueue = 4096

// Log is an audit trail being written. Create it with [New] or [Open];
// Close it to flush what is queued.
type Log struct {
	opts    Options
	queue   chan Record
	dropped atomic.Int64
	done    chan struct{}
	closer  io.Closer

	mu     sync.RWMutex // held to send, so Close never closes the queue under a send
	closed bool
	err    error // the writer's first error, after done
}

// New returns a Log writing JSON lines to w from its own goroutine.
func New(w io.Writer, o Options) *Log {
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	l := &Log{opts: o, queue: make(chan Record, o.Queue), done: make(chan struct{})}
	go l.write(w)
	return l
}

// Open appends to the file at path (created with mode 0600), as [New].
func Open(path string, o Options) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: -audit %s: %w", path, err)
	}
	l := New(f, o)
	l.closer = f
	return l, nil
}

// Args reports whether records keep the arguments' values.
func (l *Log) Args() bool { return l.opts.Args }

// Record queues r for writing, without its arguments unless the log
// keeps them. It never blocks: with the queue full, r is dropped and
// counted. A Record after Close is dropped.
func (l *Log) Record(r Record) {
	if !l.opts.Args {
		r.Args = nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	select {
	case l.queue <- r:
	default:
		l.dropped.Add(1)
	}
}

// Dropped is how many records were dropped because the queue was full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Close writes what is queued, stops the writer and closes the file of
// [Open]. It returns the first write error, if any.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
	if l.closer != nil {
		if err := l.closer.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.closer = nil
	}
	return l.err
}

func (l *Log) write(w io.Writer) {
	defer close(l.done)
	bw := bufio.NewWriter(w)
	for r := range l.queue {
		line, err := json.Marshal(r)
		if err == nil {
			if l.opts.Redact != nil {
				line = []byte(l.opts.Redact(string(line)))
			}
			_, err = bw.Write(append(line, '\n'))
		}
		if err != nil && l.err == nil {
			l.err = err
		}
		if len(l.queue) == 0 { // flush when idle: a crash loses little
			if err := bw.Flush(); err != nil && l.err == nil {
				l.err = err
			}
		}
	}
	if err := bw.Flush(); err != nil && l.err == nil {
		l.err = err
	}
}
