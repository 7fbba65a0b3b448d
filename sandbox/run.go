package sandbox

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
)

// launcherArg0 is the argv[0] that makes [Init] run the launcher.
const launcherArg0 = "mcpfsm-sandbox-launcher"

// Options tune a [Run].
type Options struct {
	// Logger receives what the sandbox refused ("the sandbox refused a
	// connection to evil.example:443"); nil discards it.
	Logger *slog.Logger
}

// Run is one sandboxed start of a command: made by [Spec.Prepare], started
// by [Run.Start], and closed by [Run.Close] once the process is gone.
type Run struct {
	spec Spec
	cmd  *exec.Cmd
	plan plan
	log  *slog.Logger
	oom  *oomWatch
	// Linux: the control socket's ends and the proxy.
	ctl, child *os.File
	proxy      *proxy
}

// plan is what the launcher gets from its parent: what to run, and how.
type plan struct {
	Path  string   `json:"path"`
	Args  []string `json:"args"`
	Env   []string `json:"env"`
	Dir   string   `json:"dir"`
	Spec  Spec     `json:"spec"`
	ABI   int      `json:"abi"`
	Probe bool     `json:"probe,omitempty"`
}

// message is one report of the launcher to its parent.
type message struct {
	Proxy  int          `json:"proxy,omitempty"`  // the proxy's port inside; its listener rides along
	Exec   bool         `json:"exec,omitempty"`   // about to exec the program
	Probed bool         `json:"probed,omitempty"` // a probe's setup worked
	Error  *launchError `json:"error,omitempty"`
}

// launchError is a setup or exec failure, as the launcher reports it.
type launchError struct {
	Feature string `json:"feature,omitempty"` // an UnavailableError's
	Reason  string `json:"reason,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Errno   int    `json:"errno,omitempty"` // the exec's
	Text    string `json:"text,omitempty"`  // any other failure
}

// StderrWatch is a writer for the program's standard error, from which
// the Run learns that an allocation failed (see [Run.Limit]); nil when the
// Spec sets no memory limit.
func (r *Run) StderrWatch() io.Writer {
	if r.spec.MemoryMB <= 0 {
		return nil
	}
	return r.oom
}

// Limit names the sandbox limit that the process, which ended as st
// says, ran into, such as "out of memory under the sandbox's memoryMB
// 256"; "" when none is known. It knows of a memory limit from what the
// program wrote to [Run.StderrWatch].
func (r *Run) Limit(st *os.ProcessState) string {
	if r.spec.MemoryMB <= 0 || (st != nil && st.Success()) || !r.oom.sawOOM() {
		return ""
	}
	return memoryLimit(r.spec.MemoryMB)
}
