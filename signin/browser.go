package signin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// OpenBrowser returns how [Login] shows the authorization URL: with the
// program $BROWSER names when it is set, else xdg-open (open on macOS,
// the URL handler on Windows) when there is one; in every case the URL is
// also printed to out, for a person on another machine. The program is
// started, not waited for.
func OpenBrowser(out io.Writer) func(ctx context.Context, authURL string) error {
	return func(ctx context.Context, authURL string) error {
		fmt.Fprintf(out, "Open this URL to sign in:\n  %s\n", authURL)
		cmd := browserCommand(authURL)
		switch {
		case cmd != nil:
		case os.Getenv("BROWSER") != "":
			return nil
		default:
			switch runtime.GOOS {
			case "darwin":
				cmd = exec.Command("open", authURL)
			case "windows":
				cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", authURL)
			default:
				if _, err := exec.LookPath("xdg-open"); err != nil {
					return nil // printed above
				}
				cmd = exec.Command("xdg-open", authURL)
			}
		}
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(out, "(could not start %s: %v; open the URL yourself)\n", cmd.Path, err)
			return nil
		}
		go func() { _ = cmd.Wait() }()
		return nil
	}
}

// browserCommand is the command $BROWSER names for authURL, or nil when
// it names none. $BROWSER is a list of commands separated by colons; the
// first one is used.
func browserCommand(authURL string) *exec.Cmd {
	first, _, _ := strings.Cut(os.Getenv("BROWSER"), ":")
	f := strings.Fields(first)
	if len(f) == 0 {
		return nil
	}
	return exec.Command(f[0], append(f[1:], authURL)...)
}

// StartBrowser opens authURL with the program $BROWSER names, when it is
// set (and does nothing otherwise): the sign-ins serve starts itself
// never open another browser. The program is started, not waited for.
func StartBrowser(authURL string) error {
	cmd := browserCommand(authURL)
	if cmd == nil {
		return nil
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not start %s: %w", cmd.Path, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
