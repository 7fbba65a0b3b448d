package main

import (
	"runtime/debug"

	"github.com/mcpfsm/mcpfsm/front"
)

// version is the module version mcpfsm was built from (see
// front.ModuleVersion): a tag with go install ...@version, else the
// pseudo-version or commit go build stamped, else "devel". It is also
// the serverInfo.version serve gives its clients.
func version() string { return front.ModuleVersion() }

// versionLine is what 'mcpfsm version' prints: the version, then the Go
// release that built it.
func versionLine() string {
	goVersion := "go?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
	}
	return "mcpfsm " + version() + " (" + goVersion + ")"
}
