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
		var cmd *exec.Cmd
		if b := os.Getenv("BROWSER"); b != "" {
			// $BROWSER is a list of commands separated by colons; the first one is used.
			first, _, _ := strings.Cut(b, ":")
			f := strings.Fields(first)
			if len(f) == 0 {
				return nil
			}
			cmd = exec.Command(f[0], append(f[1:], authURL)...)
		} else {
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
