package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/access"
	"github.com/mcpfsm/mcpfsm/console"
)

// findHost returns the console address of the one running host that keeps
// a made token in the state directory (access.StateDir): each token file
// names its address (access.TokenFile), and an address whose
// /api/status answers with that token is a running host's console (an
// MCP listener's address answers 404 and is passed over). It is how
// status, reconnect and console find a host given no -http.
func findHost(ctx context.Context) (string, error) {
	dir, err := access.StateDir()
	if err != nil {
		return "", err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.token"))
	var found []string
	for _, f := range files {
		addr, ok := tokenFileAddr(f)
		if !ok {
			continue
		}
		tok, err := access.LoadToken(f, nil)
		if err != nil {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = (&console.Client{Addr: addr, Token: tok}).Status(actx)
		cancel()
		if err == nil {
			found = append(found, addr)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no running host found in %s: pass -http ADDR (the -http of mcpfsm run or serve) or set %s", dir, console.EnvAddr)
	}
	return "", fmt.Errorf("%d hosts run (%s): pass -http ADDR to name one", len(found), strings.Join(found, ", "))
}

// tokenFileAddr is the address a token file of access.TokenFile names:
// "127.0.0.1-8808.token" is 127.0.0.1:8808, "__1-8808.token" [::1]:8808.
func tokenFileAddr(file string) (string, bool) {
	name, ok := strings.CutSuffix(filepath.Base(file), ".token")
	i := strings.LastIndexByte(name, '-')
	if !ok || i <= 0 {
		return "", false
	}
	host := name[:i]
	if strings.Contains(host, "_") {
		host = strings.ReplaceAll(host, "_", ":") // IPv6
	}
	return net.JoinHostPort(host, name[i+1:]), true
}

// hostAddr is -http, else the one running host findHost finds.
func hostAddr(ctx context.Context, addr string) (string, error) {
	if addr != "" {
		return addr, nil
	}
	return findHost(ctx)
}

const consoleUsage = `Usage: mcpfsm console [-http ADDR] [-token-file FILE] [-print]

Opens the operator console of a running mcpfsm run or serve (its -http)
in the browser, signed in with the host's token: the one-time URL
/?token=TOKEN sets the console's cookie and drops the token from the
address bar. Without -http it finds the running host through the state
directory, where a host keeps the token it made. With -print, or when
no browser can be started ($BROWSER, else xdg-open, open or start), it
prints the URL instead.

Examples:
  mcpfsm console
  mcpfsm console -http 127.0.0.1:7777 -print
`

func cmdConsole(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("console", consoleUsage)
	addr, token := clientFlags(fs)
	printURL := fs.Bool("print", false, "print the one-time URL instead of opening a browser")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return unexpectedArg(stderr, "console", fs.Arg(0))
	}
	a, err := hostAddr(ctx, *addr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm console: %v\n", err)
		return exitFail
	}
	tok, err := token.load(a)
	if err != nil {
		fmt.Fprintf(stderr, "mcpfsm console: %v\n", err)
		return exitFail
	}
	u := consoleURL(a, tok)
	if !*printURL {
		if err := openBrowser(u); err == nil {
			fmt.Fprintf(stdout, "opened the console of %s in the browser\n", a)
			return exitOK
		}
	}
	fmt.Fprintln(stdout, u)
	return exitOK
}

// consoleURL is the console's one-time sign-in URL: the token as a query
// value, which the console trades for its cookie.
func consoleURL(addr, token string) string {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/"
	if token != "" {
		u.RawQuery = url.Values{"token": {token}}.Encode()
	}
	return u.String()
}

// openBrowser opens u with $BROWSER, else the system's opener; an error
// means none could be started.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch b := os.Getenv("BROWSER"); {
	case b != "":
		cmd = exec.Command(b, u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display")
		}
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; the browser outlives the command
	return nil
}
