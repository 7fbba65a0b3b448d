package config

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Check reports what would make s fail on this machine although its
// entry is valid: a stdio command that is not on PATH (the PATH of its
// Env if it sets one) or not an executable file, and a cwd that is not a
// directory, and a sandbox this machine cannot give. Parse does not do
// this, so that a file can be validated on
// another machine; 'mcpfsm check' does.
func (s Server) Check() []error {
	if s.Type != TypeStdio {
		return nil
	}
	var errs []error
	if s.Cwd != "" {
		if fi, err := os.Stat(s.Cwd); err != nil {
			errs = append(errs, fmt.Errorf("server %s: cwd %s does not exist: create it or fix the path", s.Name, s.Cwd))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("server %s: cwd %s is not a directory", s.Name, s.Cwd))
		}
	}
	if err := s.lookCommand(); err != nil {
		errs = append(errs, fmt.Errorf("server %s: %w", s.Name, err))
	}
	return append(errs, s.checkSandbox()...)
}

// lookCommand finds s.Command as the child process would.
func (s Server) lookCommand() error {
	if strings.ContainsRune(s.Command, '/') || strings.ContainsRune(s.Command, filepath.Separator) {
		file := s.Command
		if !filepath.IsAbs(file) && s.Cwd != "" {
			file = filepath.Join(s.Cwd, file)
		}
		fi, err := os.Stat(file)
		switch {
		case err != nil:
			return fmt.Errorf("command %s does not exist", file)
		case fi.IsDir():
			return fmt.Errorf("command %s is a directory, not a program", file)
		case fi.Mode()&0o111 == 0 && filepath.Separator == '/':
			return fmt.Errorf("command %s is not executable: chmod +x it", file)
		}
		return nil
	}
	path, fromEnv := os.Getenv("PATH"), false
	for _, kv := range s.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, fromEnv = v, true
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if _, err := exec.LookPath(filepath.Join(dir, s.Command)); err == nil {
			return nil
		}
	}
	where := "mcpfsm's PATH"
	if fromEnv {
		where = "the PATH its env sets"
	}
	return fmt.Errorf("command %q is not on %s: install it, or give its full path", s.Command, where)
}
