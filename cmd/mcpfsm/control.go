package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/console"
	"github.com/mcpfsm/mcpfsm/health"
)

const statusUsage = `Usage: mcpfsm status [-http ADDR] [-http-token TOKEN] [-json]

Asks a running host (mcpfsm run or serve, started with -http ADDR) for
the state of its servers and prints a table: server, state, attempts
(n/N of the current outage), time in that state, and the last cause.
With -json it prints the console's /api/status JSON instead.

ADDR defaults to $MCPFSM_HTTP; the token comes from -token-file FILE,
else $MCPFSM_TOKEN (or the older $MCPFSM_HTTP_TOKEN). Exits 1 when no host
answers at ADDR.

Examples:
  mcpfsm status -http 127.0.0.1:7777
  MCPFSM_HTTP=127.0.0.1:7777 mcpfsm status -json
`

const reconnectUsage = `Usage: mcpfsm reconnect [-http ADDR] [-token-file FILE] [-timeout 2m] NAME | -all

Asks a running host (mcpfsm run or serve, started with -http ADDR) to
reconnect server NAME now, or every server with -all, and waits for the
attempt: a server that gave up (exhausted), waits for a retry or was
never connected starts again at once. Exits 0 when the server (every
server) is connected, 1 with the cause otherwise.

ADDR defaults to $MCPFSM_HTTP; the token comes from -token-file FILE,
else $MCPFSM_TOKEN (or the older $MCPFSM_HTTP_TOKEN). The host takes one
manual reconnect of a server a second; reconnect waits out a refusal
once.

Examples:
  mcpfsm reconnect -http 127.0.0.1:7777 everything
  mcpfsm reconnect -http 127.0.0.1:7777 -all
`

// clientFlags are the flags of the commands that talk to a running host.
func clientFlags(fs *flag.FlagSet) (addr *string, token tokenFlags) {
	addr = fs.String("http", os.Getenv(console.EnvAddr), "the host's console `ADDR` (default $"+console.EnvAddr+")")
	token = tokenFlags{
		file:   fs.String("token-file", "", "read the host's bearer token from `FILE` (default $"+access.EnvToken+")"),
		legacy: fs.String("http-token", "", "the host's bearer `TOKEN` (deprecated: use -token-file or $"+access.EnvToken+")"),
	}
	return addr, token
}

// tokenFlags are the client commands' token flags.
type tokenFlags struct{ file, legacy *string }

// load returns the token: -http-token, else -token-file, else the
// environment (access.LoadToken), else the token a host serving addr
// without a configured one keeps for this user (access.TokenFile).
func (t tokenFlags) load(addr string) (string, error) {
	if *t.legacy != "" {
		return *t.legacy, nil
	}
	tok, err := access.LoadToken(*t.file, nil)
	if err != nil || tok != "" || addr == "" {
		return tok, err
	}
	if f, err := access.TokenFile(addr); err == nil {
		if _, serr := os.Stat(f); serr == nil {
			return access.LoadToken(f, nil)
		}
	}
	return "", nil
}

func newClient(addr string, token tokenFlags) (*console.Client, error) {
	tok, err := token.load(addr)
	if err != nil {
		return nil, err
	}
	return &console.Client{Addr: addr, Token: tok}, nil
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status", statusUsage)
	addr, token := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the JSON of /api/status")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "status", fs.Arg(0))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a, err := hostAddr(ctx, *addr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm status: %v\n", err)
		return exitFail
	}
	c, err := newClient(a, token)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm status: %v\n", err)
		return exitFail
	}
	r, err := c.Status(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm status: %v\n", err)
		return exitFail
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "mcpfsm status: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	if err := console.WriteTable(stdout, r); err != nil {
		fmt.Fprintf(stderr, "mcpfsm status: %v\n", err)
		return exitFail
	}
	return exitOK
}

func cmdReconnect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("reconnect", reconnectUsage)
	addr, token := clientFlags(fs)
	all := fs.Bool("all", false, "reconnect every server")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the attempts")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *all && fs.NArg() > 0:
		return usageErr(stderr, "reconnect", "give a server NAME or -all, not both")
	case !*all && fs.NArg() != 1:
		return usageErr(stderr, "reconnect", "give one server NAME, or -all")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	a, err := hostAddr(ctx, *addr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm reconnect: %v\n", err)
		return exitFail
	}
	c, err := newClient(a, token)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm reconnect: %v\n", err)
		return exitFail
	}
	if *all {
		res, err := c.ReconnectAll(ctx)
		for _, r := range res.Results {
			printReconnect(stdout, &r)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpfsm reconnect: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	res, err := c.Reconnect(ctx, fs.Arg(0))
	var ae *console.APIError
	if errors.As(err, &ae) {
		fmt.Fprintf(stderr, "mcpfsm reconnect: %s: %s\n", fs.Arg(0), ae.Message)
		return exitFail
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm reconnect: %v\n", err)
		return exitFail
	}
	printReconnect(stdout, res)
	return exitOK
}

func printReconnect(w io.Writer, r *console.ReconnectResult) {
	if r.Error != "" {
		fmt.Fprintf(w, "%s: %s: %s\n", r.Name, r.Server.State, r.Error)
		return
	}
	fmt.Fprintf(w, "%s: %s (%d tools)\n", r.Name, r.Server.State, r.Server.ToolCount)
}

const probeUsage = `Usage: mcpfsm probe [-url URL] [-token-file FILE] [-timeout 5s]

Asks a running mcpfsm serve or run whether it is ready: GET URL (default
http://127.0.0.1:8808/readyz) with the host's bearer token (-token-file,
or $MCPFSM_TOKEN), and exits 0 on a 2xx answer, 1 otherwise, printing the
answer. It is the readiness probe of a container with no other HTTP
client (the Helm chart's), where /readyz needs the token. A URL without a
path is the host's base URL: /readyz is added.

Examples:
  mcpfsm probe
  mcpfsm probe -url http://127.0.0.1:7777
`

// probeURL is -url, with the readiness path added to a base URL
// (http://HOST:PORT, or with the path "/").
func probeURL(u *neturl.URL) string {
	if u.Host != "" && (u.Path == "" || u.Path == "/") && u.RawQuery == "" {
		u.Path = health.ReadyPath
	}
	return u.String()
}

func cmdProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("probe", probeUsage)
	url := fs.String("url", "http://127.0.0.1:8808"+health.ReadyPath, "the probe's `URL`")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after `D`")
	_, token := clientFlags(fs)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "probe", fs.Arg(0))
	}
	var host string
	if u, err := neturl.Parse(*url); err == nil {
		host = u.Host
		*url = probeURL(u)
	}
	tok, err := token.load(host)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm probe: %v\n", err)
		return exitFail
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return usageErr(stderr, "probe", "-url %q: %v", *url, err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm probe: %v\n", err)
		return exitFail
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	stdout.Write(body)
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(stderr, "mcpfsm probe: %s answered %s\n", *url, resp.Status)
		return exitFail
	}
	return exitOK
}
