package config

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// expand substitutes the variables of s, the value at path, the way the
// hosts whose files Parse reads do:
//
//   - ${VAR} is the environment variable VAR; unset, it is an error
//     (as in Claude Code);
//   - ${VAR:-default} is VAR, or default when VAR is unset or empty;
//   - ${env:VAR} is VAR, or the empty string with a warning when it is
//     unset (as in VS Code);
//   - ${workspaceFolder} is Options.WorkspaceFolder (else the working
//     directory), ${userHome} the home directory and ${pathSeparator}
//     the OS path separator;
//   - ${input:ID} is an error: mcpfsm runs unattended and cannot prompt.
//
// Any other ${...} is an error; a '$' not followed by '{' is kept, but in
// a Gemini CLI file, which reads $VAR too, $VAR is VAR as ${VAR} is.
// Codex substitutes nothing, and neither does expand in its files.
func (p *parser) expand(s, path string) (string, bool) {
	if p.d.vars == noVars || !strings.Contains(s, "$") {
		return s, true
	}
	var b strings.Builder
	ok := true
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		if name := bareName(s[i+1:]); p.d.vars == bareVars && name != "" {
			v, vok := p.variable(name, path)
			ok = ok && vok
			b.WriteString(v)
			s = s[i+1+len(name):]
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte('$')
			s = s[i+1:]
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			p.addf("%s: %q is not closed with '}'", path, redact.Line(s[i:]))
			return "", false
		}
		v, vok := p.variable(s[i+2:i+j], path)
		ok = ok && vok
		b.WriteString(v)
		s = s[i+j+1:]
	}
	return b.String(), ok
}

// bareName returns the environment variable name s starts with, if any.
func bareName(s string) string {
	i := 0
	for i < len(s) && (s[i] == '_' || 'a' <= s[i] && s[i] <= 'z' || 'A' <= s[i] && s[i] <= 'Z' || i > 0 && isDigit(s[i])) {
		i++
	}
	return s[:i]
}

// variable resolves the inside of one ${...}.
func (p *parser) variable(ref, path string) (string, bool) {
	switch ref {
	case "workspaceFolder":
		if p.opts.WorkspaceFolder != "" {
			return p.opts.WorkspaceFolder, true
		}
		wd, err := os.Getwd()
		if err != nil {
			p.addf("%s: ${workspaceFolder}: %v", path, err)
			return "", false
		}
		return wd, true
	case "userHome":
		home, err := os.UserHomeDir()
		if err != nil {
			p.addf("%s: ${userHome}: %v", path, err)
			return "", false
		}
		return home, true
	case "pathSeparator", "/":
		return string(filepath.Separator), true
	}
	if id, ok := strings.CutPrefix(ref, "input:"); ok {
		p.addf("%s: ${input:%s} is not supported: mcpfsm runs unattended and cannot prompt for it; use ${env:NAME} and set NAME in mcpfsm's environment", path, id)
		return "", false
	}
	if name, ok := strings.CutPrefix(ref, "env:"); ok {
		if !envName(name) {
			p.addf("%s: ${env:%s}: %q is not an environment variable name", path, name, name)
			return "", false
		}
		v, set := p.opts.LookupEnv(name)
		if !set {
			p.warnf("%s: ${env:%s} is empty: %s is not set", path, name, name)
		}
		return v, true
	}
	name, def, hasDef := strings.Cut(ref, ":-")
	if !envName(name) {
		p.addf("%s: ${%s} is not a variable mcpfsm knows: use ${NAME}, ${NAME:-default}, ${env:NAME}, ${workspaceFolder} or ${userHome}", path, ref)
		return "", false
	}
	v, set := p.opts.LookupEnv(name)
	switch {
	case hasDef && v == "":
		return def, true
	case !set:
		p.addf("%s: ${%s}: environment variable %s is not set: set it, or give a default as in ${%s:-value}", path, name, name, name)
		return "", false
	}
	return v, true
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
