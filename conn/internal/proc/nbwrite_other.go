//go:build !unix

package proc

import "os"

// nbWriter would make a non-blocking write; without pollable pipes it
// takes nothing, and every line is written by a goroutine that can wait.
type nbWriter struct{}

func (*nbWriter) init(*os.File) {}

func (*nbWriter) write([]byte) (int, error) { return 0, nil }
