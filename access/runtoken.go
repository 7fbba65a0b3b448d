package access

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// StateDir is the directory of mcpfsm's own state for the user running
// it: $XDG_STATE_HOME/mcpfsm, or ~/.local/state/mcpfsm.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpfsm"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: %w; set XDG_STATE_HOME", err)
	}
	return filepath.Join(home, ".local", "state", "mcpfsm"), nil
}

// TokenFile is the file in [StateDir] holding the token of a host
// serving at addr (HOST:PORT, as bound) without a configured one:
// "127.0.0.1-8808.token" ([RunToken], [WriteTokenFile]).
func TokenFile(addr string) (string, error) {
	dir, err := StateDir()
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	name := strings.NewReplacer(":", "_", "/", "_", "\\", "_").Replace(host) + "-" + port
	return filepath.Join(dir, name+".token"), nil
}

// RunToken returns the token of a host that was given none but serves
// the TCP addresses addrs: every local user can reach a loopback port, so
// even there a request needs a token. It is the one already in the
// [TokenFile] of an address with a fixed port (mode 0600, owned by this
// user), else a new random one (130 bits). Write it with [WriteTokenFile]
// once the address is bound. mcpfsm removes the token files it wrote
// when it exits, so a file is found here only while another process
// serves the address or after one that did not exit cleanly: clients of
// a crashed host keep working after its restart, while an ordinary stop
// leaves no token behind.
func RunToken(addrs []string) string {
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "0" {
			continue
		}
		if f, err := TokenFile(a); err == nil {
			if tok, err := readOwnToken(f); err == nil {
				return tok
			}
		}
	}
	return rand.Text()
}

// WriteTokenFile writes token to the [TokenFile] of the bound address
// addr (mode 0600, in a directory of mode 0700, by a rename: no other
// user can read it at any moment), and returns the file's path.
func WriteTokenFile(addr, token string) (string, error) {
	f, err := TokenFile(addr)
	if err != nil {
		return "", err
	}
	if err := writeToken(f, token); err != nil {
		return "", fmt.Errorf("writing the token file: %w", err)
	}
	return f, nil
}

// readOwnToken reads a token file written by writeToken, refusing one
// that others could have read or written.
func readOwnToken(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return "", errors.New("not a private file")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if err := CheckToken(tok); err != nil {
		return "", err
	}
	return tok, nil
}

// writeToken writes token to path, mode 0600, by a rename: no other user
// can read it at any moment, and no link at path is followed.
func writeToken(path, token string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".token-")
	if err != nil {
		return err
	}
	_, werr := f.WriteString(token + "\n")
	if err := errors.Join(werr, f.Chmod(0o600), f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
