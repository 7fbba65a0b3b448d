package conn

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/proc"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTerminateDuration is how long a stdio server gets to exit after its
// stdin is closed, and again after SIGTERM, before it is killed. Two grace
// periods plus the kill fit inside the default close timeout.
const DefaultTerminateDuration = 2 * time.Second

// Stdio is a [Transport] that runs a server as a child process and speaks
// MCP over its stdin and stdout. Every generation starts a new process.
//
// On Unix the child runs in its own process group, and the whole group is
// killed when the child exits or is shut down, so wrappers such as "npx" or
// "sh -c" leave no grandchildren behind. On Windows only the child itself
// is terminated.
//
// The child's environment is Env on top of a few of the host's variables
// that locate and describe the user's system (PATH, HOME, USER, the
// locale...: see [DefaultEnvNames]); nothing else of the host's reaches
// it, since secrets hide under innocent names (a DATABASE_URL with a
// password, MYSQL_PWD, SENTRY_DSN). Name what a server needs in Env, or
// set InheritEnv.
type Stdio struct {
	// Path is the program to run, looked up in PATH if it has no slash.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env holds KEY=VALUE entries for the child; they override the
	// host's.
	Env []string
	// InheritEnv passes the host's whole environment except the
	// variables that look like credentials by name or value (see
	// the package doc), instead of only [DefaultEnvNames]. The scrubbing is
	// a heuristic: prefer naming variables in Env.
	InheritEnv bool
	// Dir is the working directory; empty means the host's.
	Dir string
	// Stderr receives the server's standard error, one write at a time.
	// Nil discards it. A Write that blocks holds back only this server
	// (once its stderr pipe fills); after a Write fails, Stderr gets
	// nothing more, and the pipe is still read for [ServerExit].
	Stderr io.Writer
	// TerminateDuration is the grace period after closing stdin before
	// SIGTERM, and after SIGTERM before SIGKILL. Zero means
	// DefaultTerminateDuration.
	TerminateDuration time.Duration
	// Sandbox, if set, runs every process of the server inside it (Linux
	// only; see package sandbox, whose Init the program must call first in
	// main). A sandbox this system cannot give fails the attempt with an
	// [ErrPermanent] error that names what is missing: the server is never
	// started unsandboxed. A connection the sandbox's proxy refused is
	// logged by the supervisor's Logger; an exit under its memory limit
	// says so in [ServerExit].
	Sandbox *sandbox.Spec
}

// Command returns a [Stdio] transport that runs name with args.
func Command(name string, args ...string) *Stdio {
	return &Stdio{Path: name, Args: args}
}

// Open returns a single-use SDK transport that starts the process when the
// SDK connects it. The returned transport implements [Terminator].
func (s *Stdio) Open(context.Context) (mcp.Transport, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	grace := s.TerminateDuration
	if grace <= 0 {
		grace = DefaultTerminateDuration
	}
	spec := proc.Spec{Path: s.Path, Args: append([]string(nil), s.Args...), Env: append([]string(nil), s.Env...),
		InheritEnv: s.InheritEnv, Dir: s.Dir, Stderr: s.Stderr, Grace: grace}
	if s.Sandbox != nil {
		sb := *s.Sandbox
		spec.Sandbox = &sb
	}
	return transport.NewStdio(spec), nil
}

// GracePeriod is the grace period a Supervisor gives a stdio server with
// [Stdio.TerminateDuration] grace and [Config.CloseTimeout] closeTimeout:
// grace, shortened if needed so that both grace periods and the kill fit
// in closeTimeout, with a margin of a quarter of it (at most 500ms) for
// the kill and the reaping. The process group is always SIGKILLed within
// CloseTimeout.
func GracePeriod(grace, closeTimeout time.Duration) time.Duration {
	return proc.GraceWithin(grace, closeTimeout)
}

// DefaultEnvNames are the host environment variables a stdio server gets
// unless [Stdio.InheritEnv] is set: what a program needs to find its
// tools, its home, its user and its locale, and nothing that commonly
// holds a secret. HOME, LOGNAME, PATH, SHELL, TERM and USER are the
// TypeScript SDK's list; TMPDIR and TZ say where temporary files go and
// which time zone applies, and LANG, LANGUAGE and LC_* (on Unix) choose the locale, without which a server may
// misread or garble non-ASCII text. On Windows the list is the one a
// process needs to start and find its profile.
func DefaultEnvNames() []string { return proc.DefaultEnvNames() }

// validate reports a Stdio that could never start, so that Start rejects it.
func (s *Stdio) validate() error {
	if s.Path == "" {
		return fmt.Errorf("Stdio.Path is empty: name the server program to run, as in conn.Command(\"npx\", ...)")
	}
	if s.TerminateDuration < 0 {
		return fmt.Errorf("Stdio.TerminateDuration is %v: use a positive duration, or zero for %v", s.TerminateDuration, DefaultTerminateDuration)
	}
	if s.Sandbox != nil {
		if err := s.Sandbox.Validate(); err != nil {
			return fmt.Errorf("Stdio.Sandbox: %w", err)
		}
	}
	return nil
}
