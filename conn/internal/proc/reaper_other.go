//go:build !linux

package proc

// exitWatch reports that this system has no way to wait for a process
// without holding an OS thread; the caller waits in cmd.Wait.
func exitWatch(int, func()) bool { return false }

// exitedEarly has nothing to hurry where exitWatch watches nothing.
func exitedEarly(int) {}
