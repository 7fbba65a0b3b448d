package conn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/proc"
	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a supervisor connects over: the Transport interface, and the
// settings of the package's two transports, Stdio and HTTP. Their
// mechanism (the process's pipes, the HTTP client's record of answers, the
// wire around every other transport) is package conn/internal/transport.

// Transport opens a fresh MCP transport for every generation. An SDK
// transport is single-use (it binds one connection for life), so a
// Supervisor asks for a new one on each attempt.
type Transport interface {
	Open(ctx context.Context) (mcp.Transport, error)
}

// TransportFunc adapts a function to [Transport], for any SDK transport the
// package has no ready-made Transport for (stdio has [Command], Streamable
// HTTP has [Streamable]), and for in-process servers in tests
// (mcp.NewInMemoryTransports, or package conntest).
type TransportFunc func(ctx context.Context) (mcp.Transport, error)

// Open calls f.
func (f TransportFunc) Open(ctx context.Context) (mcp.Transport, error) { return f(ctx) }

// Terminator is an optional interface of an mcp.Transport returned by
// [Transport.Open] that owns a server process. Terminate stops the process
// if it still runs (gracefully first) and returns a channel that is closed
// once the process, and everything it started, is gone. It must be
// idempotent and must not block.
//
// A Supervisor waits for this channel, bounded by Config.CloseTimeout,
// before it starts the next generation: this close barrier is what
// guarantees that two processes of one server are never alive at once.
// The supervisor terminates the process beside the session's Close, not
// after it, since that Close may wait on the server. Transports without
// it own no process: they are released at once, and their session's
// Close goes on in the background (Close waits for it, bounded by
// CloseTimeout).
type Terminator interface {
	Terminate() <-chan struct{}
}

// validator is implemented by the package's own transports, so that Start
// rejects their bad settings instead of failing every attempt.
type validator interface{ validate() error }

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
	// Launcher, if set, starts the server's command in place of
	// exec.Cmd.Start, as package sandbox's *sandbox.Spec does to run it
	// inside a sandbox. If it also has a method Validate() error, Start
	// calls it and reports its error as a [*ConfigError]. What the
	// launcher logs goes to the supervisor's Logger; a limit it names
	// appears in [ServerExit]. It must not change while a supervisor uses
	// the transport.
	Launcher Launcher
}

// Launcher starts a [Stdio] server's command in its own way: package
// sandbox's *sandbox.Spec starts it inside a sandbox. Implementations
// must be safe for concurrent use: each connection attempt calls Launch.
type Launcher interface {
	// Launch starts cmd, which has not started, and returns once it runs
	// or has failed to start; the supervisor then waits for it with
	// cmd.Wait as usual. ctx bounds the launcher's own setup, not the
	// process. Launch may change cmd's Path, Args, Env, ExtraFiles and
	// SysProcAttr, but keeps its Stdin, Stdout, Stderr, Dir and process
	// group. logger receives what the launcher reports while the process
	// runs. A failure that no retry can fix is an error that matches
	// [ErrPermanent], such as a [*PermanentError] naming the fix, or one
	// with a method PermanentFix() string that names it (which conn wraps
	// in a [*PermanentError]): the supervisor then stops trying.
	Launch(ctx context.Context, cmd *exec.Cmd, logger *slog.Logger) (Launched, error)
}

// Launched is a command that a [Launcher] started. The supervisor calls
// its methods from the goroutine that reaps the process. It is an alias
// of an interface type, so that a launcher's package can implement
// [Launcher] by writing the same interface type, without importing conn.
type Launched = interface {
	// StderrWatch returns a writer that also receives the process's
	// standard error, or nil.
	StderrWatch() io.Writer
	// Limit names the limit that the process, which ended as st says,
	// ran into, such as "out of memory under the sandbox's memoryMB 256";
	// "" when none is known. It becomes [ServerExit.Limit].
	Limit(st *os.ProcessState) string
	// Close releases what the launch holds; it is called once the process
	// is reaped.
	Close()
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
	if l := s.Launcher; l != nil {
		spec.Launch = func(ctx context.Context, cmd *exec.Cmd, logger *slog.Logger) (proc.Launched, error) {
			launched, err := l.Launch(ctx, cmd, logger)
			return launched, permanentByFix(err)
		}
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
	if v, ok := s.Launcher.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("Stdio.Launcher: %w", err)
		}
	}
	return nil
}

// DefaultHTTPKeepAlive is the keep-alive interval of a Supervisor whose
// Transport is an [HTTP] and whose Config.KeepAlive is zero. Nothing else
// notices a Streamable HTTP server that is down or frozen while no call is
// made: the SDK retries its event stream for about 13 to 26 s before it
// gives up on a refused connection, and waits for ever on a frozen one.
// With it, a server that refuses or resets the connection is a loss at
// the next ping (within 10 s), and a frozen one within two intervals.
const DefaultHTTPKeepAlive = 10 * time.Second

// HTTP is a [Transport] for a Streamable HTTP server. Every generation gets
// a new mcp.StreamableClientTransport and so a new MCP session: the SDK
// retries its event streams itself but never re-initializes a lost
// session, so a session the server no longer knows (it restarted) ends the
// generation and the supervisor reconnects.
//
// Liveness: a Supervisor pings an HTTP server every [DefaultHTTPKeepAlive]
// unless Config.KeepAlive says otherwise, and a request of any kind (a
// call, a ping) that finds the connection refused or reset ends the
// generation: the server is lost, not just the call failed.
type HTTP struct {
	// Endpoint is the server's MCP URL, such as "https://host/mcp".
	Endpoint string
	// Client is the HTTP client to use. Nil means http.DefaultClient.
	Client *http.Client
	// Header is added to every request to the Endpoint's origin (its
	// scheme, host and port), such as a static "Authorization: Bearer ..."
	// or an API key. The headers the SDK sets itself (content type,
	// session and protocol version, and Authorization when OAuthHandler
	// has a token) take precedence. A request that a redirect sends to any
	// other origin, an https Endpoint redirected to http included, goes
	// without these headers and without Authorization.
	Header http.Header
	// OAuthHandler, if set, authorizes the requests (package
	// github.com/modelcontextprotocol/go-sdk/auth has handlers for the
	// authorization code and client credentials flows). One handler serves
	// every generation, so the tokens it holds survive a reconnect and a
	// reconnect does not log in again.
	OAuthHandler auth.OAuthHandler
}

// Streamable returns an [HTTP] transport for endpoint.
func Streamable(endpoint string) *HTTP { return &HTTP{Endpoint: endpoint} }

// Open returns a fresh SDK transport for one generation. Its HTTP client
// also keeps the server's last error answer, so that a failure or loss can
// say what the server said ([HTTPError]) and honour its Retry-After.
func (h *HTTP) Open(context.Context) (mcp.Transport, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	return transport.NewHTTP(h.Endpoint, h.Client, h.Header, h.OAuthHandler), nil
}

// defaultKeepAlive is the keep-alive of a Supervisor of h whose
// Config.KeepAlive is zero.
func (h *HTTP) defaultKeepAlive() time.Duration { return DefaultHTTPKeepAlive }

func (h *HTTP) validate() error {
	u, err := url.Parse(h.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("HTTP.Endpoint %q is not an http(s) URL with a host: use the server's full MCP URL, such as https://host/mcp", redact.URL(h.Endpoint))
	}
	for k, vs := range h.Header {
		if k == "" || strings.ContainsAny(k, " :\t\r\n") {
			return fmt.Errorf("HTTP.Header has the invalid name %q: use a header name such as Authorization", k)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("HTTP.Header[%q] has a line break in its value: remove it", k)
			}
		}
	}
	return nil
}
