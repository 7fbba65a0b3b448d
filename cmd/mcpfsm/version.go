package main

import "runtime/debug"

// version is the module version mcpfsm was built from: a tag with go
// install ...@version, else "dev".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
