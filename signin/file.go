package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// FileStore is a [Store] in a directory of mcpfsm's state (by default
// $XDG_STATE_HOME/mcpfsm/credentials): mode 0700, one file per
// credential at mode 0600, each written whole to a temporary file and
// renamed over the old one, so that a reader never sees half of it.
type FileStore struct {
	// Dir is the directory; it is created at mode 0700 when missing.
	Dir string

	mu      sync.Mutex
	locks   map[string]*sync.Mutex // in-process refresh locks by credential
	changed chan struct{}          // closed at the next Save or Delete in this process
}

// Changed returns a channel closed at the next Save or Delete made
// through s (a [Handler] waiting for a sign-in wakes at once for one made
// in its own process; another process's is seen when it polls).
func (s *FileStore) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// notify closes the channel Changed returned.
func (s *FileStore) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// NewFileStore returns a FileStore in dir.
func NewFileStore(dir string) *FileStore { return &FileStore{Dir: dir} }

// ErrCorrupt is matched by the error of a credential file that cannot be
// read as one.
var ErrCorrupt = errors.New("corrupt credential file")

// ErrUnsafe is matched by the error of a credential file or directory
// that another user owns or others may read.
var ErrUnsafe = errors.New("unsafe credential file")

const credSuffix = ".json"

func (s *FileStore) path(k Key) string { return filepath.Join(s.Dir, k.id()+credSuffix) }

// ensureDir creates the directory, or checks the one there.
func (s *FileStore) ensureDir() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("credential directory %s: %w; create it (mode 0700) or set XDG_STATE_HOME", s.Dir, err)
	}
	return checkSafe(s.Dir, true)
}

// checkSafe reports a file or directory another user owns, or (off
// Windows) one that group or others may access.
func checkSafe(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symbolic link; remove it and sign in again", ErrUnsafe, path)
	}
	if !ownedByMe(fi) {
		return fmt.Errorf("%w: %s belongs to another user; remove it (or run mcpfsm as its owner) and sign in again", ErrUnsafe, path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		want := "600"
		if dir {
			want = "700"
		}
		return fmt.Errorf("%w: %s has mode %04o, which lets other users read it; run: chmod %s %s", ErrUnsafe, path, fi.Mode().Perm(), want, path)
	}
	return nil
}

// read reads one credential file.
func read(path string) (*Credential, error) {
	if err := checkSafe(path, false); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Credential
	if err := json.Unmarshal(b, &c); err != nil || c.Resource == "" || c.AccessToken == "" {
		return nil, fmt.Errorf("%w: %s is not a credential mcpfsm wrote; remove it and sign in again (mcpfsm auth login NAME -config FILE)", ErrCorrupt, path)
	}
	return &c, nil
}

// List implements [Store].
func (s *FileStore) List(context.Context) ([]*Credential, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credential directory %s: %w", s.Dir, err)
	}
	if err := checkSafe(s.Dir, true); err != nil {
		return nil, err
	}
	var out []*Credential
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), credSuffix) {
			continue
		}
		c, err := read(filepath.Join(s.Dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Saved.After(out[j].Saved) })
	return out, nil
}

// Find implements [Store].
func (s *FileStore) Find(ctx context.Context, subject, resource string) (*Credential, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if c.Subject == subject && c.Resource == resource {
			return c, nil
		}
	}
	return nil, nil
}

// Save implements [Store].
func (s *FileStore) Save(_ context.Context, c *Credential) error {
	if err := s.ensureDir(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	path := s.path(c.Key)
	tmp, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("credential directory %s: %w", s.Dir, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	s.notify()
	return nil
}

// Delete implements [Store].
func (s *FileStore) Delete(ctx context.Context, subject, resource string) (int, error) {
	all, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range all {
		if c.Subject == subject && c.Resource == resource {
			if err := os.Remove(s.path(c.Key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return n, err
			}
			n++
		}
	}
	s.notify()
	return n, nil
}

// Lock implements [Store]: a mutex per credential within the process,
// and a lock on a file beside it between processes (where the system has
// one).
func (s *FileStore) Lock(ctx context.Context, k Key) (func(), error) {
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	m := s.locks[k.id()]
	if m == nil {
		m = &sync.Mutex{}
		s.locks[k.id()] = m
	}
	s.mu.Unlock()
	m.Lock()
	if err := s.ensureDir(); err != nil {
		m.Unlock()
		return nil, err
	}
	unlockFile, err := lockFile(ctx, filepath.Join(s.Dir, k.id()+".lock"))
	if err != nil {
		m.Unlock()
		return nil, err
	}
	return func() {
		unlockFile()
		m.Unlock()
	}, nil
}
