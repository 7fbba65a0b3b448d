package proc

import (
	"runtime"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// DefaultEnvNames are the host environment variables a stdio server gets
// unless [Spec.InheritEnv] is set: what a program needs to find its
// tools, its home, its user and its locale, and nothing that commonly
// holds a secret. HOME, LOGNAME, PATH, SHELL, TERM and USER are the
// TypeScript SDK's list; TMPDIR and TZ say where temporary files go and
// which time zone applies, and LANG, LANGUAGE and LC_* (see
// IsDefaultEnvName) choose the locale, without which a server may
// misread or garble non-ASCII text. On Windows the list is the one a
// process needs to start and find its profile.
func DefaultEnvNames() []string {
	if runtime.GOOS == "windows" {
		return slices.Clone(windowsEnvNames)
	}
	return slices.Clone(unixEnvNames)
}

var (
	unixEnvNames    = []string{"HOME", "LANG", "LANGUAGE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}
	windowsEnvNames = []string{"APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
		"PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP",
		"USERNAME", "USERPROFILE", "WINDIR"}
)

// IsDefaultEnvName reports whether a host variable passes to a stdio
// server by default: one of [DefaultEnvNames], or on Unix a locale
// category (LC_ALL, LC_CTYPE, ...). Windows names compare case-insensitively.
func IsDefaultEnvName(name string) bool {
	if runtime.GOOS == "windows" {
		return slices.Contains(windowsEnvNames, strings.ToUpper(name))
	}
	return slices.Contains(unixEnvNames, name) || strings.HasPrefix(name, "LC_")
}

// AllowedEnv returns the default environment of a stdio server: the
// variables of parent (in os.Environ form) that IsDefaultEnvName
// allows, then extra, whose entries win over the parent's. Nothing else of
// the host reaches the server: pass what it needs in [Spec.Env].
func AllowedEnv(parent, extra []string) []string {
	return childEnv(parent, extra, func(name, _ string) bool { return IsDefaultEnvName(name) })
}

// InheritedEnv returns the environment of a stdio server with
// [Spec.InheritEnv]: parent without the variables whose name is
// credential-shaped (redact.IsCredentialName: TOKEN, SECRET, PASSWORD,
// API_KEY, ... in the name) or whose value is a URL with a password
// (redact.HasURLPassword), then extra, whose entries win. It is a
// heuristic: a secret under a name and value that look innocent passes.
func InheritedEnv(parent, extra []string) []string {
	return childEnv(parent, extra, func(name, value string) bool {
		return !redact.IsCredentialName(name) && !redact.HasURLPassword(value)
	})
}

func childEnv(parent, extra []string, keep func(name, value string) bool) []string {
	out := make([]string, 0, len(extra)+16)
	for _, kv := range parent {
		name, value, _ := strings.Cut(kv, "=")
		// A value starting with "()" is an exported shell function: code,
		// not configuration.
		if name == "" || strings.HasPrefix(value, "()") || !keep(name, value) {
			continue
		}
		out = append(out, kv)
	}
	// os/exec keeps the last value of a duplicated name, so appending is
	// enough for extra to override.
	return append(out, extra...)
}
