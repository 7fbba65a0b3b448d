//go:build unix

package signin

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether the user running mcpfsm owns fi.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Getuid()
}
