package host

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
)

// TraceFile writes every transition of the connection machine it is given
// as one line of an fsm trace (package fsm/trace): time, machine (the
// server), from, event, when, to, and a [conn.TraceExtra] of attempt,
// delay, generation and cause. The trace can be checked against conn.Table with trace.Check and drawn with
// fsmdot -trace. Pass [TraceFile.Record] as (or from) Options.OnTransition.
type TraceFile struct {
	path string
	hide func(string) string

	mu  sync.Mutex
	f   *os.File
	err error // the first write error
}

// OpenTrace appends a trace to the file at path (created with mode 0600).
// Causes are written with credential-shaped text masked and, with hide
// (a registry's String, such as Options.Secrets'), with its secrets
// hidden by value; hide may be nil.
func OpenTrace(path string, hide func(string) string) (*TraceFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("host: -trace %s: %w", path, err)
	}
	if hide == nil {
		hide = func(s string) string { return s }
	}
	return &TraceFile{path: path, hide: hide, f: f}, nil
}

// Path is the trace's file.
func (t *TraceFile) Path() string { return t.path }

// Record writes tr as a line. It never fails the caller: the first write
// error is kept for Close.
func (t *TraceFile) Record(tr conn.Transition) {
	if tr.Err != nil {
		tr.Err = errors.New(t.hide(tr.Err.Error())) // TraceStep masks what is credential-shaped
	}
	s := tr.TraceStep()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return
	}
	if err := trace.Write(t.f, s); err != nil && t.err == nil {
		t.err = err
	}
}

// Close closes the file and returns the first error writing it.
func (t *TraceFile) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return t.err
	}
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = err
	}
	t.f = nil
	return t.err
}
