// Command mcpfsm keeps an agent host's MCP servers alive. Its main
// command, serve, reads the server list the host already has (Claude,
// Cursor, VS Code, Codex, Gemini CLI, Windsurf formats), supervises every
// server and serves all their tools, resources and prompts as one MCP
// server, over stdio or Streamable HTTP; run supervises them for a host
// of its own, and check, status, reconnect, call, tools, probe and demo
// do what their names say.
//
// Run it with -h for the subcommands, the config format and examples.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/internal/suggest"
	"github.com/mcpfsm/mcpfsm/sandbox"
	"github.com/mcpfsm/mcpfsm/signin"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // invalid config, a server that did not come up, a failed call
	exitUsage = 2 // bad flags or arguments
)

const usageText = `mcpfsm supervises MCP servers with github.com/mcpfsm/mcpfsm/conn.

Usage:
  mcpfsm check -config FILE                      validate FILE and summarise it
  mcpfsm tools -config FILE [-timeout 30s]       list the tools of every server
  mcpfsm call  -config FILE [-timeout 30s] TOOL [JSON-ARGS]
                                                 call one tool and print its result
  mcpfsm run   -config FILE [-http ADDR] [-log-format text|json] [-log-level info]
                                                 supervise until SIGINT/SIGTERM;
                                                 SIGHUP reloads FILE; -http serves
                                                 the operator console at ADDR
  mcpfsm serve -config FILE [-listen ADDR] [-http ADDR]
                                                 serve every server's tools as one MCP
                                                 server (stdio, or Streamable HTTP)
  mcpfsm status [-http ADDR] [-json]             the servers of a running host
                                                 (found through the state directory
                                                 when -http is not given)
  mcpfsm console [-http ADDR] [-print]           open a running host's console, signed in
  mcpfsm reconnect [-http ADDR] NAME | -all      reconnect a running host's server now
  mcpfsm probe [-url URL]                        is a running host ready (its /readyz)
  mcpfsm auth login NAME -config FILE            sign in to a remote server that needs OAuth
  mcpfsm auth status -config FILE                which servers are signed in
  mcpfsm auth logout NAME -config FILE           forget a server's credential
  mcpfsm demo                                    watch a crash and a recovery (no setup)
  mcpfsm version                                 the module version mcpfsm was built from

Run 'mcpfsm COMMAND -h' for a command's flags and examples.
` + configHelp + `
Exit status: 0 on success, 1 on failure, 2 on bad usage.
`

const configHelp = `
Config file: the server list your MCP host already has, unchanged:
Claude Desktop (claude_desktop_config.json), Claude Code (.mcp.json) and
Cursor (.cursor/mcp.json) list servers under "mcpServers"; VS Code
(.vscode/mcp.json) under "servers". Comments and trailing commas are
allowed.
  {
    "mcpServers": {
      "everything": {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-everything"],
        "env": {"LOG_LEVEL": "debug"},
        "reconnect": {"initialDelayMs": 500, "maxDelayMs": 30000, "maxAttempts": 10}
      },
      "remote": {"type": "http", "url": "https://example.com/mcp",
                 "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}}
    }
  }

  Each server is named by its key, any string; its tools are published as
  mcp__<server>__<tool>, with a key other than 1 to 64 of A-Z, a-z, 0-9, '_'
  and '-' (no "__", no trailing '_') sanitized: "Brave Search" becomes
  brave_search ('mcpfsm check' shows it). An invalid entry is left out with
  its error; the others are served. Give exactly one of:
    command             program to run as a stdio server (looked up in PATH)
    url                 http:// or https:// endpoint of an HTTP server
  The hosts' options (all optional; null means omitted):
    type                "stdio", "http" (Streamable HTTP) or "sse" (the
                        2024-11-05 HTTP+SSE transport); default from
                        command or url
    args                array of strings: the command's arguments
    env                 object of strings: the server's environment variables;
                        of the host's, only PATH, HOME, USER, LOGNAME, SHELL,
                        TERM, TMPDIR, TZ and the locale are passed on, so
                        name every other one a server needs here
    envFile             a KEY=VALUE file of more variables (env wins)
    cwd                 the command's working directory
    headers             object of strings: HTTP headers for url servers
    disabled            true: leave the server out
  mcpfsm's own options:
    reconnect           reconnect policy: enabled (default true),
                        initialDelayMs (500), maxDelayMs (30000),
                        maxAttempts per outage (10), jitter 0..1 (0)
    failOnStartupError  true: a server whose first attempt fails is an error
                        instead of being retried in the background (false)
    connectTimeoutMs    bound on one connection attempt (30000)
    callTimeoutMs       bound on one tool call (300000)
    closeTimeoutMs      how long a stopped server process may take to exit (5000)
    keepAliveMs         ping interval (0: none for a command server,
                        10000 for a url server)
  Sandboxes (Linux; VS Code's keys): "sandboxEnabled": true on a command
  server runs it with the "sandbox" block (top level, overridden key by
  key by the server's): filesystem {allowWrite, denyRead, denyWrite,
  allowRead}, network {allowedDomains, deniedDomains, allowAllUnixSockets},
  limits {memoryMB, maxProcs, maxFiles}. Reads are allowed except denyRead (only allowRead
  when given), writes denied except allowWrite, the network denied except
  allowedDomains, through mcpfsm's proxy. -sandbox-all sandboxes every
  command server that does not say "sandboxEnabled": false. See
  docs/sandbox.md.
  Strings in command, args, env, envFile, cwd, url, headers and sandbox
  paths may use ${VAR}, ${VAR:-default}, ${env:VAR}, ${workspaceFolder}
  (-workspace, default the config file's directory) and ${userHome};
  ${input:...} is an error (mcpfsm cannot prompt). Unknown keys, wrong
  types and trailing data are errors; keys other hosts use and mcpfsm
  ignores (alwaysAllow, autoApprove, dev, ...) are warnings. 'mcpfsm
  check' lists them all.
`

func main() {
	// A sandboxed server starts as mcpfsm itself, the launcher.
	sandbox.Init()
	if kind := os.Getenv(demoServerEnv); kind != "" {
		os.Exit(demoServer(kind))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command. The first SIGINT, SIGTERM or SIGHUP (unless it
// reloads: see hangupsReload) cancels its context: every server is
// stopped, with its grace periods. A second
// one skips the grace periods but still kills every server process group
// before mcpfsm exits.
func run(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, interrupt := context.WithCancelCause(context.Background())
	defer interrupt(nil)
	hurry, hurried := context.WithCancel(context.Background())
	defer hurried()
	go func() {
		for n := 0; n < 2; {
			select {
			case sig := <-sigs:
				if sig == syscall.SIGHUP && hangupsReload.Load() {
					continue // run's console reloads on it
				}
				if n++; n == 1 {
					interrupt(&signalError{sig})
				} else {
					hurried()
				}
			case <-hurry.Done():
				return // run returned
			}
		}
	}()
	return runContext(withHurry(ctx, hurry), args, stdout, stderr)
}

// signalError is the cause of run's context when a signal ended it.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "received " + e.sig.String() }

// hangupsReload is set once SIGHUP means "reload the config" (run's host
// console) rather than "stop".
var hangupsReload atomic.Bool

// hurryKey holds the context whose end means "stop now": closeAll gives up
// waiting and kills.
type hurryKey struct{}

func withHurry(ctx, hurry context.Context) context.Context {
	return context.WithValue(ctx, hurryKey{}, hurry)
}

// hurryOf returns ctx's hurry context, or one that never ends.
func hurryOf(ctx context.Context) context.Context {
	if h, ok := ctx.Value(hurryKey{}).(context.Context); ok {
		return h
	}
	return context.Background()
}

// runContext is run with the context that stands for "interrupted" passed
// in, so tests can cancel it.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "tools":
		return cmdTools(ctx, args[1:], stdout, stderr)
	case "call":
		return cmdCall(ctx, args[1:], stdout, stderr)
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "status":
		return cmdStatus(ctx, args[1:], stdout, stderr)
	case "reconnect":
		return cmdReconnect(ctx, args[1:], stdout, stderr)
	case "probe":
		return cmdProbe(ctx, args[1:], stdout, stderr)
	case "auth":
		return cmdAuth(ctx, args[1:], stdout, stderr)
	case "console":
		return cmdConsole(ctx, args[1:], stdout, stderr)
	}
	commands := []string{"check", "tools", "call", "run", "serve", "demo", "status", "reconnect", "probe", "auth", "console", "version"}
	hint := "commands: " + strings.Join(commands, ", ")
	if best, ok := suggest.Closest(strings.TrimLeft(args[0], "-"), commands); ok {
		hint = "did you mean " + best + "?"
	}
	fmt.Fprintf(stderr, "mcpfsm: unknown command %q; %s\nrun 'mcpfsm -h' for usage\n", args[0], hint)
	return exitUsage
}

// newFlags returns a flag set that prints nothing itself: parseFlags
// prints its help (usage text, then the flags) to stdout on -h, and a
// short error with a hint to stderr on a bad flag.
func newFlags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpfsm "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; ok false means return code. -h and --help
// print the command's help to stdout (exit 0); a bad flag prints its
// error, a hint when one helps and where help is, to stderr (exit 2).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(io.Discard)
		return exitOK, false
	}
	cmd := strings.TrimPrefix(fs.Name(), "mcpfsm ")
	msg := err.Error()
	if hint := flagHint(fs, err); hint != "" {
		msg += "; " + hint
	}
	return usageErr(stderr, cmd, "%s", msg), false
}

// flagHint suggests the fix of a flag error: the flag meant, or a
// duration's unit.
func flagHint(fs *flag.FlagSet, err error) string {
	text := err.Error()
	if name, ok := strings.CutPrefix(text, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		name = strings.TrimLeft(name, "-")
		if best, ok := suggest.Closest(name, names); ok {
			return "did you mean -" + best + "?"
		}
		return ""
	}
	// invalid value "10" for flag -timeout: parse error
	var value, name string
	if _, scanErr := fmt.Sscanf(text, "invalid value %q for flag -%s", &value, &name); scanErr != nil {
		return ""
	}
	name = strings.TrimSuffix(name, ":")
	f := fs.Lookup(name)
	if f == nil {
		return ""
	}
	if _, derr := time.ParseDuration(f.DefValue); derr == nil {
		if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
			return "durations take a unit: " + value + "s"
		}
		return "durations look like 10s, 1m30s or 500ms"
	}
	return ""
}

// unexpectedArg reports an argument a command does not take, hinting
// -config when it names a config file.
func unexpectedArg(stderr io.Writer, cmd, arg string) int {
	hint := ""
	switch strings.ToLower(filepath.Ext(arg)) {
	case ".json", ".jsonc", ".toml":
		hint = "; give the config file as -config " + arg
	}
	return usageErr(stderr, cmd, "unexpected argument %q%s", arg, hint)
}

func usageErr(stderr io.Writer, cmd, format string, a ...any) int {
	fmt.Fprintf(stderr, "mcpfsm %s: %s\nrun 'mcpfsm %s -h' for usage\n", cmd, fmt.Sprintf(format, a...), cmd)
	return exitUsage
}

// loadConfig loads -config with opts, printing its errors.
// Warnings go to stderr too.
func loadConfig(cmd, path string, opts *config.Options, stderr io.Writer) (*config.Config, int) {
	if path == "" {
		return nil, usageErr(stderr, cmd, "-config FILE is required")
	}
	cfg, err := config.Load(path, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm %s: %v\n", cmd, err)
		if cfg == nil {
			return nil, exitFail
		}
		// Some entries are invalid: run the others.
		fmt.Fprintf(stderr, "mcpfsm %s: %s: left out %d invalid server(s) (%s); going on with the %d valid one(s)\n",
			cmd, path, len(cfg.Skipped), skippedKeys(cfg.Skipped), len(cfg.Servers))
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "mcpfsm %s: %s: warning: %s\n", cmd, path, w)
	}
	if cmd == "serve" || cmd == "check" {
		if errs := cfg.CheckNotServing(path); len(errs) > 0 {
			for _, err := range errs {
				fmt.Fprintf(stderr, "mcpfsm %s: %v\n", cmd, err)
			}
			return nil, exitFail
		}
	}
	return cfg, exitOK
}

// skippedKeys lists the keys of skipped entries, quoted.
func skippedKeys(sk []config.SkippedServer) string {
	q := make([]string, len(sk))
	for i, s := range sk {
		q[i] = strconv.Quote(s.Key)
	}
	return strings.Join(q, ", ")
}

// hostFlags are the flags of every command that starts servers: the config
// file and the logger.
type hostFlags struct {
	cmd                 string
	path, format, level *string
	reading             *loadFlags
	stderr              io.Writer // load's: where a sign-in's one line goes
	store               *string   // -credential-store
}

func addHostFlags(fs *flag.FlagSet, cmd, level string) *hostFlags {
	return &hostFlags{
		cmd:     cmd,
		path:    fs.String("config", "", "the config `FILE` (JSON)"),
		format:  fs.String("log-format", "text", "log `FORMAT`: text or json"),
		level:   fs.String("log-level", level, "log `LEVEL`: debug, info, warn or error"),
		reading: addLoadFlags(fs),
		store: fs.String("credential-store", "", "where sign-in credentials are kept: `URL` redis://[:PASSWORD@]HOST:PORT/DB (or rediss://, unix:///PATH?db=N), "+
			"shared by replicas, every value encrypted with $"+signin.CredentialKeyEnv+"; default $"+credentialStoreEnv+", else files in the state directory"),
	}
}

// loadFlags are the flags that change how the config is read.
type loadFlags struct {
	workspace  *string
	sandboxAll *bool
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	return &loadFlags{
		workspace:  fs.String("workspace", "", "what ${workspaceFolder} expands to (default: the config file's directory, or the parent of its .vscode directory)"),
		sandboxAll: fs.Bool("sandbox-all", false, `sandbox every stdio server that does not say "sandboxEnabled": false (Linux)`),
	}
}

// options are the config.Options the flags give.
func (l *loadFlags) options() *config.Options {
	return &config.Options{WorkspaceFolder: *l.workspace, SandboxAll: *l.sandboxAll}
}

// load makes the logger, on stderr made safe for concurrent writers (the
// returned writer), and loads the config. A nil config means the command
// ends with code.
func (h *hostFlags) load(stderr io.Writer) (*slog.Logger, *config.Config, io.Writer, int) {
	stderr = &syncWriter{w: stderr}
	h.stderr = stderr
	logger, err := newLogger(stderr, *h.format, *h.level)
	if err != nil {
		return nil, nil, stderr, usageErr(stderr, h.cmd, "%v", err)
	}
	cfg, code := loadConfig(h.cmd, *h.path, h.reading.options(), stderr)
	return logger, cfg, stderr, code
}
