package config

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// envFileEntries reads the env file at file (relative to Options.Dir),
// the value at path, and appends its KEY=VALUE entries to env. It returns
// the file's path as read.
//
// The format is the dotenv one VS Code reads: one KEY=VALUE per line,
// blank lines and lines starting with '#' skipped, an optional "export "
// prefix, and values optionally in single quotes (taken literally) or
// double quotes (with \n, \t, \" and \\ escapes).
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
			p.addf("%s: %s, line %d: want KEY=VALUE with KEY of letters, digits and '_', not %q", path, file, n, line)
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

// maxEnvFile bounds the size of an env file.
const maxEnvFile = 1 << 20

// envValue unquotes one dotenv value; an unquoted value ends at " #".
func envValue(v string) (string, bool) {
	switch {
	case strings.HasPrefix(v, `"`):
		end := strings.LastIndexByte(v, '"')
		if end == 0 {
			return "", false
		}
		s, err := strconv.Unquote(v[:end+1])
		return s, err == nil
	case strings.HasPrefix(v, "'"):
		end := strings.LastIndexByte(v, '\'')
		if end == 0 {
			return "", false
		}
		return v[1:end], true
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, true
}
