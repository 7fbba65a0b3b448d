//go:build !unix

package main

import (
	"fmt"
	"os"
)

// startHolder needs sessions, a Unix facility.
func startHolder(string) {
	fmt.Fprintln(os.Stderr, "testserver: -setsid-holder needs Unix")
	os.Exit(2)
}
