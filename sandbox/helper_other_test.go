//go:build !linux

package sandbox_test

// helperMain does nothing: the helper runs in Linux sandboxes only.
func helperMain() {}
