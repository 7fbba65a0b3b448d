//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package signin

import "context"

// lockFile is a no-op where the system has no flock: the lock is the
// process's own.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
