package config

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/mcpfsm/mcpfsm/internal/redact"
)

// envFileEntries reads the env file at file (relative to Options.Dir),
// the value at path, and appends its KEY=VALUE entries to env. It returns
// the file's path as read.
//
// The format is the dotenv one VS Code reads: one KEY=VALUE per line,
// blank lines and lines starting with '#' skipped, an optional "export "
// prefix, and values optionally in single quotes (taken literally) or
// double quotes (with \n, \t, \" and \\ escapes; any other backslash is
// itself, so "C:\data\db" is a Windows path), a comment after the closing
// quote or after " #" in an unquoted value.
func (p *parser) envFileEntries(file, path string, env *[]string) string {
	if !filepath.IsAbs(file) && p.opts.Dir != "" {
		file = filepath.Join(p.opts.Dir, file)
	}
	if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
		p.addf("%s: %s is not a regular file", path, file)
		return file
	} else if err == nil && fi.Size() > maxEnvFile {
		p.addf("%s: %s is larger than %d bytes: is it really an env file?", path, file, maxEnvFile)
		return file
	}
	data, err := os.ReadFile(file)
	if err != nil {
		p.addf("%s: cannot read the env file: %v", path, err)
		return file
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !envName(key) {
			p.addf("%s: %s, line %d: %s", path, file, n, badEnvLine(key, ok))
			continue
		}
		v, ok := envValue(strings.TrimSpace(val))
		if !ok {
			p.addf("%s: %s, line %d: the value of %s has an unterminated or malformed quote", path, file, n, key)
			continue
		}
		*env = append(*env, key+"="+v)
	}
	if err := sc.Err(); err != nil {
		p.addf("%s: cannot read the env file %s: %v", path, file, err)
	}
	return file
}

// badEnvLine says what is wrong with a line that is not KEY=VALUE, given
// what precedes its '=' (the whole line when it has none). It never quotes
// a value: a line without '=' is named by its key only when it starts
// with one ("OPENAI_API_KEY: sk-..." is a key and a value), and not at all
// otherwise (it may be a bare token).
func badEnvLine(key string, hasEq bool) string {
	if hasEq {
		if key == "" {
			return "want KEY=VALUE, not a line that starts with '='"
		}
		return fmt.Sprintf("want KEY=VALUE with KEY of letters, digits and '_', not the key %q", redact.Line(key))
	}
	end := strings.IndexFunc(key, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if end > 0 && (key[end] == ':' || key[end] == ' ' || key[end] == '\t') && envName(key[:end]) && redact.Line(key[:end]) == key[:end] {
		return fmt.Sprintf("want KEY=VALUE, but the line of %s has no '=' (its value is not shown)", key[:end])
	}
	return "want KEY=VALUE, but the line has no '=' (it is not shown: it may hold a secret)"
}

// maxEnvFile bounds the size of an env file.
const maxEnvFile = 1 << 20

// envValue unquotes one dotenv value (see envFileEntries): it reports
// false for a quote that is not closed, or is followed by more than a
// comment.
func envValue(v string) (string, bool) {
	if v == "" || v[0] != '"' && v[0] != '\'' {
		if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		return v, true
	}
	quote := v[0]
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		if c == quote {
			rest := strings.TrimSpace(v[i+1:])
			return b.String(), rest == "" || rest[0] == '#'
		}
		if c == '\\' && quote == '"' && i+1 < len(v) {
			if e, ok := envEscapes[v[i+1]]; ok {
				b.WriteByte(e)
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return "", false
}

// envEscapes are the escapes of a double-quoted value.
var envEscapes = map[byte]byte{'n': '\n', 't': '\t', '"': '"', '\\': '\\'}
