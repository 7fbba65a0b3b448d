package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrServesItself: a server of the config is mcpfsm serve of that same
// config. Serving it would start another serve of the config, which would
// start another, and so on, each wrapping the tools' names once more
// (mcp__mcpfsm__mcp__mcpfsm__...).
var ErrServesItself = errors.New("the server is mcpfsm serve of this same config")

// ServedConfig reports whether s starts mcpfsm serve (its command is a
// program named mcpfsm, or the running program itself, and "serve" is
// among its arguments), and the config file that serve would read (its
// -config argument, relative to s.Cwd), "" when none is given.
func (s Server) ServedConfig() (string, bool) {
	if s.Type != TypeStdio || s.Command == "" || !slices.Contains(s.Args, "serve") || !s.isMcpfsm() {
		return "", false
	}
	for i, a := range s.Args {
		var path string
		switch {
		case (a == "-config" || a == "--config") && i+1 < len(s.Args):
			path = s.Args[i+1]
		case strings.HasPrefix(a, "-config="), strings.HasPrefix(a, "--config="):
			_, path, _ = strings.Cut(a, "=")
		default:
			continue
		}
		if !filepath.IsAbs(path) && s.Cwd != "" {
			path = filepath.Join(s.Cwd, path)
		}
		return path, true
	}
	return "", true
}

// isMcpfsm reports whether s's command is mcpfsm: by name, or as the
// running program's own file.
func (s Server) isMcpfsm() bool {
	if strings.TrimSuffix(filepath.Base(s.Command), ".exe") == "mcpfsm" {
		return true
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	return sameFile(s.Command, self)
}

// CheckNotServing returns an error matching [ErrServesItself] for every
// server of c that runs mcpfsm serve on the file at path, c's own.
func (c *Config) CheckNotServing(path string) []error {
	var errs []error
	for _, s := range c.Servers {
		if served, ok := s.ServedConfig(); ok && served != "" && sameFile(served, path) {
			errs = append(errs, fmt.Errorf("server %s: %w: remove it from %s and list the servers it would front instead",
				s.Name, ErrServesItself, path))
		}
	}
	return errs
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
