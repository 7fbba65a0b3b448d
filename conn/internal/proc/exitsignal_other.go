//go:build !unix

package proc

import "os"

// signalName is empty: there are no signals.
func (terminateStep) signalName() string { return "" }

// exitSignal returns "": a process without signals only exits.
func exitSignal(*os.ProcessState) string { return "" }
