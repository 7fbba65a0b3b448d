package host

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long [Host.Watch] waits after the last change
// of the file before it reloads: an editor's save is often several
// writes, or a write to a new file and a rename over the old one.
const DefaultDebounce = 200 * time.Millisecond

// WatchOptions configure [Host.Watch].
type WatchOptions struct {
	// Debounce is the quiet time after a change before the reload; zero
	// means DefaultDebounce.
	Debounce time.Duration
	// Reloaded, if set, is called after each reload with its error (nil
	// when the new config was applied in full).
	Reloaded func(error)
	// Changes, if set, is the watcher's source of changes instead of the
	// file system: each value received is a change in the file's
	// directory, handled as one fsnotify reports (after Debounce, the
	// file is read again and reloaded if its content differs from what
	// was last loaded); a closed channel ends the watch, as a closed
	// fsnotify watcher does. Nil (the default) watches the directory.
	// It is for simulations under testing/synctest, where fsnotify's
	// read of the kernel's events blocks in a system call, which is not
	// durably blocked, so simulated time could not move.
	Changes <-chan struct{}
}

// Watcher reloads a host's config file when it changes; see [Host.Watch].
type Watcher struct {
	h    *Host
	o    WatchOptions
	abs  string
	fsw  *fsnotify.Watcher // nil when WatchOptions.Changes is the source
	last [sha256.Size]byte // the content last loaded (zero: unreadable)
}

// Watch starts watching Options.Path: once [Watcher.Run] runs, the file
// is reloaded whenever it changes, with the same diff as [Host.Reload],
// so unchanged servers keep their process and tools, and a file that
// does not load changes nothing. It watches the file's directory, so an
// editor that replaces the file (writes a new one and renames it over
// the old) is followed too, and so is a Kubernetes ConfigMap volume,
// whose files are symbolic links into a directory swapped at each update:
// any change in the directory makes the watcher read the file again, and
// it reloads when the content differs from what it last loaded. Changes
// made after Watch returns are seen. With WatchOptions.Changes, the
// file system is not watched: the changes are those sent on it.
func (h *Host) Watch(o WatchOptions) (*Watcher, error) {
	if h.opts.Path == "" {
		return nil, ErrNoPath
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	abs, err := filepath.Abs(h.opts.Path)
	if err != nil {
		return nil, fmt.Errorf("host: watch %s: %w", h.opts.Path, err)
	}
	if o.Changes != nil {
		return &Watcher{h: h, o: o, abs: abs, last: digest(abs)}, nil
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("host: watch %s: %w", h.opts.Path, err)
	}
	if err := fsw.Add(filepath.Dir(abs)); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("host: watch %s: %w", h.opts.Path, err)
	}
	return &Watcher{h: h, o: o, abs: abs, fsw: fsw, last: digest(abs)}, nil
}

// Run reloads on every change until ctx ends, then stops watching. It
// returns ctx's error.
func (w *Watcher) Run(ctx context.Context) error {
	var events <-chan fsnotify.Event // nil, so never ready, with Changes
	var errs <-chan error
	if w.fsw != nil {
		defer w.fsw.Close()
		events, errs = w.fsw.Events, w.fsw.Errors
	}
	h := w.h
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-w.o.Changes:
			if !ok {
				return ctx.Err()
			}
			timer.Reset(w.o.Debounce)
		case ev, ok := <-events:
			if !ok {
				return ctx.Err()
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				timer.Reset(w.o.Debounce)
			}
		case err, ok := <-errs:
			if !ok {
				return ctx.Err()
			}
			h.log.Warn("watching the config: "+err.Error(), "config", h.opts.Path)
		case <-timer.C:
			d := digest(w.abs)
			if d == w.last {
				continue // another file of the directory, or the same content
			}
			w.last = d
			h.log.Info("the config file changed: reloading", "config", h.opts.Path)
			err := h.Reload(ctx)
			if w.o.Reloaded != nil {
				w.o.Reloaded(err)
			}
		}
	}
}

// digest is the SHA-256 of the file at path, zero when it cannot be read.
func digest(path string) [sha256.Size]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(data)
}
