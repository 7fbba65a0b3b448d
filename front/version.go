package front

import "runtime/debug"

// modulePath is the path of the module package front belongs to.
const modulePath = "github.com/mcpfsm/mcpfsm"

// ModuleVersion returns the version of the mcpfsm module the running
// program was built with, from [debug.ReadBuildInfo]: its tag or
// pseudo-version, whether mcpfsm is the main module (go install
// ...@version, or go build in a clone, which stamps the commit) or a
// dependency; for a build without one (go run, go test) "devel", with
// the commit when the build recorded it. It is the default
// serverInfo.version of a front.
func ModuleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if bi.Main.Path != modulePath {
		v = ""
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v = d.Replace.Version
				}
			}
		}
	}
	if v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev[:min(len(rev), 12)] + dirty
}
