package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/config"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/front"
	"github.com/mcpfsm/mcpfsm/host"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const checkUsage = `Usage: mcpfsm check -config FILE [-workspace DIR] [-sandbox-all]

Validates FILE and prints a summary of each server: its transport, its
reconnect schedule (retries per outage, first..longest delay, and the
total backoff before it gives up), its timeouts and, for a stdio server,
its effective sandbox ("sandboxEnabled", or -sandbox-all). Nothing is
started but a probe that this machine can give the sandboxes.

An invalid file prints every problem found, one per line, each naming
its JSON path (such as servers.fs.args[1] must be a string), and exits 1.
So does a valid file whose stdio command is not on PATH (or not
executable), whose cwd does not exist, or whose sandbox this machine cannot
give (naming what is missing and the fix). Keys that other
hosts use and mcpfsm ignores, and reconnect options given with
"enabled": false, are printed as warnings and do not fail the check.
` + configHelp + `
Examples:
  mcpfsm check -config mcpfsm.json
  mcpfsm check -config config/testdata/mcpfsm.json
  mcpfsm check -config .mcp.json
  mcpfsm check -config .vscode/mcp.json
`

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", checkUsage)
	path := fs.String("config", "", "the config `FILE` (JSON)")
	lf := addLoadFlags(fs)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "check", fs.Arg(0))
	}
	cfg, code := loadConfig("check", *path, lf.options(), stderr)
	if cfg == nil {
		return code
	}
	fmt.Fprintf(stdout, "%s: %d server(s) (%s layout)\n", *path, len(cfg.Servers), cfg.Format)
	code = exitOK
	if len(cfg.Skipped) > 0 {
		code = exitFail // reported by loadConfig
	}
	for _, s := range cfg.Servers {
		summarise(stdout, s)
		warnTiming(stderr, s)
		for _, err := range s.Check() {
			fmt.Fprintf(stderr, "mcpfsm check: %v\n", err)
			code = exitFail
		}
	}
	return code
}

func summarise(w io.Writer, s config.Server) {
	if s.Key != "" {
		fmt.Fprintf(w, "%q is served as %s (tools mcp__%s__<tool>)\n", s.Key, s.Name, s.Name)
	}
	if s.Type != config.TypeStdio {
		fmt.Fprintf(w, "%s: %s %s\n", s.Name, s.Type, redact.URL(s.URL))
		if len(s.Headers) > 0 {
			fmt.Fprintf(w, "  headers:   %s (values not shown)\n", strings.Join(slices.Sorted(maps.Keys(s.Headers)), ", "))
		}
	} else {
		cmd := append([]string{s.Command}, s.Args...)
		for i, a := range cmd {
			if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
				cmd[i] = fmt.Sprintf("%q", a)
			}
		}
		fmt.Fprintf(w, "%s: stdio %s\n", s.Name, strings.Join(cmd, " "))
		if s.Cwd != "" {
			fmt.Fprintf(w, "  cwd:       %s\n", s.Cwd)
		}
		if len(s.Env) > 0 {
			var keys []string
			for _, kv := range s.Env {
				k, _, _ := strings.Cut(kv, "=")
				keys = append(keys, k)
			}
			fmt.Fprintf(w, "  env:       %s (values not shown)\n", strings.Join(keys, ", "))
		}
	}
	fmt.Fprintf(w, "  reconnect: %s\n", Schedule(s.Reconnect))
	or := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	keep := "off"
	if s.URL != "" && s.KeepAlive == 0 {
		keep = "every " + conn.DefaultHTTPKeepAlive.String()
	}
	if s.KeepAlive > 0 {
		keep = "every " + s.KeepAlive.String()
	}
	fmt.Fprintf(w, "  timeouts:  connect %v, call %v, close %v; keep-alive %s\n",
		or(s.ConnectTimeout, conn.DefaultConnectTimeout), or(s.CallTimeout, conn.DefaultCallTimeout),
		or(s.CloseTimeout, conn.DefaultCloseTimeout), keep)
	if p := s.PolicySummary(); p != "" {
		fmt.Fprintf(w, "  policy:    %s\n", p)
	}
	if s.FailOnStartupError {
		fmt.Fprintf(w, "  startup:   a failed first attempt is an error (failOnStartupError)\n")
	} else {
		fmt.Fprintf(w, "  startup:   a failed first attempt is retried in the background\n")
	}
	if s.Type == config.TypeStdio {
		if s.Sandbox == nil {
			fmt.Fprintf(w, "  sandbox:   none (\"sandboxEnabled\": true, or serve -sandbox-all, confines it)\n")
		} else {
			fmt.Fprintf(w, "  sandbox:   %s\n", strings.Join(sandboxDescribe(s), "\n             "))
		}
	}
}

const toolsUsage = `Usage: mcpfsm tools -config FILE [-search QUERY [-limit 5]] [-timeout 30s] [-log-level warn] [-log-format text]

Starts every server of FILE on one tool registry, waits (at most -timeout)
for each one's first connection attempt, prints the registered tools
(public name, server, first line of the description), then stops every
server. With -search it prints the tools that best match QUERY instead,
best first, as serve's search tool (-tools search) ranks them. Servers with failOnStartupError wait for their first attempt
during startup; the others retry in the background, but tools reports
the outcome of their first attempt. Some servers offer tools by what the
client declares it can do (sampling, elicitation, roots): serve's clients
may see more tools than tools lists.

Exits 1, printing the error of each server that did not come up (a
"connection failed" error, with the last lines of its stderr), if any
server failed.
` + startFlagsHelp + `
Examples:
  mcpfsm tools -config mcpfsm.json
  mcpfsm tools -config mcpfsm.json -timeout 2m -log-level info
  mcpfsm tools -config mcpfsm.json -search "read a file from disk"
`

const startFlagsHelp = `
Logs (to stderr) are the supervisors' slog records. At -log-level debug
they include every line a stdio server writes to its stderr.
`

func cmdTools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tools", toolsUsage)
	hf := addHostFlags(fs, "tools", "warn")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the servers to come up")
	query := fs.String("search", "", "print the tools that best match `QUERY` (words saying what the tool should do)")
	limit := fs.Int("limit", front.DefaultSearchLimit, "with -search, print at most `N` tools")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "tools", fs.Arg(0))
	}
	if *timeout <= 0 {
		return usageErr(stderr, "tools", "-timeout must be positive")
	}
	if *limit < 1 {
		return usageErr(stderr, "tools", "-limit must be positive")
	}
	logger, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	reg := conn.NewRegistry()
	hs := host.New(host.Options{Logger: logger, Registry: reg, StartTimeout: *timeout, SignIn: signInHandlers("tools", *hf.path, *hf.store, stderr)})
	_ = hs.Start(ctx, cfg)
	failed := false
	if *query != "" {
		if err := searchTools(stdout, reg.Tools(), *query, *limit); err != nil {
			fmt.Fprintf(stderr, "mcpfsm tools: -search %q: %v\n", *query, err)
			failed = true
		}
	} else {
		printTools(stdout, reg.Tools())
	}
	failed = reportFailures(stderr, "tools", hs) || failed
	if closeHost(ctx, hs, "tools", stderr) {
		failed = true
	}
	if failed {
		return exitFail
	}
	return exitOK
}

const callUsage = `Usage: mcpfsm call -config FILE [-timeout 30s] TOOL [JSON-ARGS]

Starts the server that owns TOOL, waits (at most -timeout) for it to come
up, calls TOOL with JSON-ARGS (a JSON object; default {}), prints the
result, and stops the server. TOOL is a public tool name as 'mcpfsm tools'
prints it: mcp__<server>__<tool>. The call itself is bounded by the
server's callTimeoutMs.

Text content is printed as is, one part per line; other content (images,
resources, ...) as one JSON object per line; a result with only
structured content prints that as JSON. Exits 1 if the server did not
come up, the call failed, or the tool reported an error (isError).
` + startFlagsHelp + `
Examples:
  mcpfsm call -config mcpfsm.json mcp__everything__echo '{"message": "hi"}'
  mcpfsm call -config mcpfsm.json -timeout 2m mcp__everything__get-sum '{"a": 1, "b": 2}'
`

func cmdCall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("call", callUsage)
	hf := addHostFlags(fs, "call", "warn")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the server to come up")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageErr(stderr, "call", "want TOOL and optionally JSON-ARGS, got %d arguments", fs.NArg())
	}
	if *timeout <= 0 {
		return usageErr(stderr, "call", "-timeout must be positive")
	}
	tool := fs.Arg(0)
	callArgs := json.RawMessage(`{}`)
	if fs.NArg() == 2 {
		callArgs = json.RawMessage(fs.Arg(1))
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(callArgs, &obj); err != nil || obj == nil {
			return usageErr(stderr, "call", "JSON-ARGS must be a JSON object such as '{\"text\": \"hi\"}', not %q", fs.Arg(1))
		}
	}
	logger, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	srv, ok := serverOf(cfg, tool)
	if !ok {
		var names []string
		for _, s := range cfg.Servers {
			names = append(names, s.Name)
		}
		return usageErr(stderr, "call", "%q names no server of %s: tool names are mcp__<server>__<tool>, and the servers are %s",
			tool, *hf.path, strings.Join(names, ", "))
	}
	reg := conn.NewRegistry()
	hs := host.New(host.Options{Logger: logger, Registry: reg, StartTimeout: *timeout, SignIn: signInHandlers("call", *hf.path, *hf.store, stderr)})
	_ = hs.Start(ctx, &config.Config{Servers: []config.Server{srv}})
	code = exitOK
	if reportFailures(stderr, "call", hs) {
		code = exitFail
	} else {
		code = call(ctx, reg, tool, callArgs, stdout, stderr)
	}
	if closeHost(ctx, hs, "call", stderr) {
		code = exitFail
	}
	return code
}

// serverOf finds the server a public tool name belongs to: server names
// hold no "__", so the name between "mcp__" and the next "__" is it.
func serverOf(cfg *config.Config, tool string) (config.Server, bool) {
	name, _, ok := conn.SplitToolName(tool)
	if !ok {
		return config.Server{}, false
	}
	return cfg.Lookup(name)
}

func call(ctx context.Context, reg *conn.ToolRegistry, tool string, args json.RawMessage, stdout, stderr io.Writer) int {
	if _, ok := reg.Lookup(tool); !ok {
		var names []string
		for _, t := range reg.Tools() {
			names = append(names, t.Name)
		}
		fmt.Fprintf(stderr, "mcpfsm call: no tool %q; the server has: %s\n", tool, strings.Join(names, ", "))
		return exitFail
	}
	res, err := reg.Call(ctx, tool, args)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm call: %v\n", err)
		return exitFail
	}
	if err := printResult(stdout, res); err != nil {
		fmt.Fprintf(stderr, "mcpfsm call: %v\n", err)
		return exitFail
	}
	if res.IsError {
		fmt.Fprintf(stderr, "mcpfsm call: %s reported an error (isError)\n", tool)
		return exitFail
	}
	return exitOK
}

func printResult(w io.Writer, res *mcp.CallToolResult) error {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Fprint(w, t.Text)
			if !strings.HasSuffix(t.Text, "\n") {
				fmt.Fprintln(w)
			}
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("encode %T: %w", c, err)
		}
		fmt.Fprintf(w, "%s\n", b)
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return fmt.Errorf("encode structured content: %w", err)
		}
		fmt.Fprintf(w, "%s\n", b)
	}
	return nil
}

const runUsage = `Usage: mcpfsm run -config FILE [-http ADDR [-http-token TOKEN]] [-log-format text|json] [-log-level info]

Supervises every server of FILE until SIGINT (Ctrl-C) or SIGTERM: crashed
stdio servers are respawned and lost sessions reconnected with each
server's reconnect policy, and their tools stay registered.

Logs go to stderr: one record per state change ("connected and registered
tools", "connection lost; reconnecting in 500ms (attempt 1/10); cause:
...") with its server, state, from, event and generation, and err when it
reports a failure. Each time the set of registered tools changes, the new
list is printed to stdout.

On the first signal every server is stopped (bounded by the longest
closeTimeoutMs plus 5s; a stdio server's grace periods are shortened to fit
its closeTimeoutMs); a second signal skips the grace periods: every server
process group is killed, then mcpfsm exits. No server outlives it. Exits 0
after a clean shutdown, 1 if a server with failOnStartupError did not come
up or a server process could not be confirmed gone ("shutdown may be
incomplete").
` + consoleHelp + accessHelp + startFlagsHelp + `
Examples:
  mcpfsm run -config mcpfsm.json
  mcpfsm run -config mcpfsm.json -http 127.0.0.1:7777   # then open http://127.0.0.1:7777/
  mcpfsm run -config mcpfsm.json -log-format json -log-level debug 2>log.jsonl
`

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", runUsage)
	hf := addHostFlags(fs, "run", "info")
	cf := addConsoleFlags(fs)
	af := addAccessFlags(fs, false)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "run", fs.Arg(0))
	}
	logger, cfg, stderr, code := hf.load(stderr)
	if cfg == nil {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mcpfsm run: %v\n", err)
		return exitFail
	}
	sf, err := af.build("", logger)
	if err != nil {
		return fail(err)
	}
	defer sf.removeTokens()
	_, ln, err := sf.listen("", cf)
	if err != nil {
		return fail(err)
	}
	reg := conn.NewRegistry()
	defer printToolLists(reg, stdout)()
	hc, err := newHostConsole(cf, ln, logger)
	if err != nil {
		return fail(err)
	}
	defer hc.stop()
	// Each transition is logged once, by its supervisor (server, state,
	// from, event, generation, err): no second record here.
	ho := hc.hostOptions(hf, logger, reg)
	ho.StartTimeout = -1
	hs := host.New(ho)
	if err := hc.attach(hs, sf, reg); err != nil {
		return fail(err)
	}
	_ = hs.Start(ctx, cfg)
	code = exitOK
	if len(hs.Failures()) > 0 {
		code = exitFail
	}
	if code == exitOK {
		logger.Info(fmt.Sprintf("supervising %d server(s); interrupt to stop, SIGHUP to reload the config", len(cfg.Servers)))
		hc.run(ctx)
		logger.Info("shutting down")
	} else {
		reportFailures(stderr, "run", hs)
	}
	if closeHost(ctx, hs, "run", stderr) {
		code = exitFail
	}
	return code
}

// closeHost closes hs, cut short by ctx's hurry (a second signal), and
// reports whether closing failed. A server whose grace period a second
// signal cut short is closed, not failed: Close kills its process group
// before it returns, and only [conn.ErrIncompleteShutdown] says a process
// may be left.
func closeHost(ctx context.Context, hs *host.Host, cmd string, stderr io.Writer) (failed bool) {
	hurry := hurryOf(ctx)
	err := hs.Close(hurry)
	switch {
	case err == nil:
		return false
	case hurry.Err() != nil && onlyCanceled(err):
		fmt.Fprintf(stderr, "mcpfsm %s: stopped at once on a second signal: every server process was killed\n", cmd)
		return false
	}
	fmt.Fprintf(stderr, "mcpfsm %s: %v\n", cmd, err)
	if errors.Is(err, conn.ErrIncompleteShutdown) {
		fmt.Fprintf(stderr, "mcpfsm %s: a server process may still be running\n", cmd)
	}
	return true
}

// onlyCanceled reports whether every error joined in err is a context
// cancellation.
func onlyCanceled(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyCanceled(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, context.Canceled) && !errors.Is(err, conn.ErrIncompleteShutdown)
}

// printToolLists prints reg's tools to w each time the list changes, the
// first list too, until stop is called.
func printToolLists(reg *conn.ToolRegistry, w io.Writer) (stop func()) {
	printed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	changed := reg.Changed() // before any server starts: the first list is not missed
	go func() {
		defer close(printed)
		last := "\x00never printed"
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			// Take the next channel before reading, so no change is missed.
			changed = reg.Changed()
			tools := reg.Tools()
			var names strings.Builder
			for _, t := range tools {
				names.WriteString(t.Name + "\x00" + t.Server + "\n")
			}
			if names.String() == last {
				continue
			}
			last = names.String()
			fmt.Fprintf(w, "tools (%d):\n", len(tools))
			printTools(w, tools)
		}
	}()
	return func() {
		cancel()
		<-printed
	}
}

// sandboxDescribe is what a stdio server's sandbox allows, the lists as
// the sandbox enforces them, with what it adds (marked); when they cannot
// be made (check reports why, Server.Check), the configured ones.
func sandboxDescribe(s config.Server) []string {
	lines := s.Sandbox.Describe()
	if eff, err := s.Sandbox.Effective(s.CommandPath(), s.Cwd, os.Environ()); err == nil {
		lines = append(eff.Describe(), lines[2:]...)
	}
	return lines
}
