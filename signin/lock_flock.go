//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package signin

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// lockFile holds an exclusive flock on path until the returned function
// is called. It waits as long as another process holds it; the refresh
// that process makes is bounded by its HTTP client's timeout.
func lockFile(_ context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("credential lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("credential lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
