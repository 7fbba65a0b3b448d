package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/mcpfsm/mcpfsm/policy"
)

// member is one key and raw value of a JSON object, in file order.
type member struct {
	key string
	val json.RawMessage
}

// parser collects the errors and warnings of one file.
type parser struct {
	opts     Options
	errs     []error
	warnings []string
	// gemini reads the file as Gemini CLI's settings.json; allowed and
	// excluded are its server lists (allowed nil: not given).
	gemini            bool
	allowed, excluded []string
	// literal substitutes no variables, as Codex does not.
	literal bool
	// The sandboxes (sandbox.go): the top-level block, the servers that
	// said "sandboxEnabled": false, and the blocks of those that said
	// nothing (for Options.SandboxAll).
	topSandbox   *sandboxBlock
	unsandboxed  map[string]bool
	serverBlocks map[string]*sandboxBlock
}

func (p *parser) addf(format string, a ...any) { p.errs = append(p.errs, fmt.Errorf(format, a...)) }

func (p *parser) warnf(format string, a ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf(format, a...))
}

func (p *parser) err() error { return errors.Join(p.errs...) }

// object splits raw, which must be a JSON object, into its members in
// order. Duplicate keys are reported and dropped.
func (p *parser) object(raw json.RawMessage, path string) ([]member, bool) {
	if k := kind(raw); k != "object" {
		p.addf("%s must be a JSON object, not %s", path, article(k))
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		p.addf("%s is not valid JSON: %v", path, err)
		return nil, false
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			p.addf("%s is not valid JSON: %v", path, err)
			return nil, false
		}
		key := tok.(string) // raw is valid JSON: object keys are strings
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			p.addf("%s is not valid JSON: %v", path, err)
			return nil, false
		}
		if seen[key] {
			p.addf("%s is given more than once", pathKey(path, key))
			continue
		}
		seen[key] = true
		out = append(out, member{key, val})
	}
	return out, true
}

// flatten adds the errors joined in err one by one.
func (p *parser) flatten(err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			p.flatten(e)
		}
		return
	}
	p.errs = append(p.errs, err)
}

func (p *parser) str(raw json.RawMessage, path string) (string, bool) {
	if k := kind(raw); k != "string" {
		p.addf("%s must be a string, not %s", path, article(k))
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.addf("%s is not a valid string: %v", path, err)
		return "", false
	}
	if strings.ContainsRune(s, 0) {
		p.addf("%s must not contain a NUL character", path)
		return "", false
	}
	return s, true
}

// text is str with variables substituted.
func (p *parser) text(raw json.RawMessage, path string) (string, bool) {
	s, ok := p.str(raw, path)
	if !ok {
		return "", false
	}
	return p.expand(s, path)
}

func (p *parser) nonEmptyString(raw json.RawMessage, path, what string) string {
	s, ok := p.text(raw, path)
	if ok && s == "" {
		p.addf("%s must not be empty: give %s", path, what)
	}
	return s
}

func (p *parser) url(raw json.RawMessage, path string) string {
	s, ok := p.text(raw, path)
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		p.addf("%s must be an http:// or https:// URL such as https://host/mcp: it does not parse as a URL", path)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		p.addf("%s must be an http:// or https:// URL such as https://host/mcp, not %q", path, redact.URL(s))
	}
	return s
}

func (p *parser) stringArray(raw json.RawMessage, path string) []string {
	if k := kind(raw); k != "array" {
		p.addf("%s must be an array of strings, not %s", path, article(k))
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		p.addf("%s is not valid JSON: %v", path, err)
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, _ := p.text(e, fmt.Sprintf("%s[%d]", path, i))
		out = append(out, s)
	}
	return out
}

func (p *parser) env(raw json.RawMessage, path string) []string {
	members, ok := p.object(raw, path)
	if !ok {
		return nil
	}
	var out []string
	for _, m := range members {
		kpath := pathKey(path, m.key)
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") {
			p.addf("%s is not a valid environment variable name: it must be non-empty, without '=' or NUL", kpath)
		}
		switch kind(m.val) {
		case "null":
			continue // omitted
		case "number": // VS Code allows numbers
			out = append(out, m.key+"="+string(bytes.TrimSpace(m.val)))
			continue
		}
		v, _ := p.text(m.val, kpath)
		out = append(out, m.key+"="+v)
	}
	return out
}

// maxMs is the largest accepted duration option, as for policy delays.
const maxMs = policy.DelayLimitMs

// millis parses a whole number of milliseconds, at least lo.
func (p *parser) millis(raw json.RawMessage, path string, lo float64) time.Duration {
	if k := kind(raw); k != "number" {
		p.addf("%s must be a number of milliseconds, not %s", path, article(k))
		return 0
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	what := "a positive integer"
	if lo == 0 {
		what = "a non-negative integer"
	}
	if err != nil || f != math.Trunc(f) || f < lo || f > maxMs {
		p.addf("%s must be %s number of milliseconds, at most %d", path, what, maxMs)
		return 0
	}
	return time.Duration(f) * time.Millisecond
}

// kind names the JSON type of a valid raw value.
func kind(raw json.RawMessage) string {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func article(kind string) string {
	switch kind {
	case "null", "nothing":
		return kind
	case "array", "object":
		return "an " + kind
	}
	return "a " + kind
}

// pathKey appends key to a dotted path, Go-quoting keys that are not
// plain identifiers so that the path stays readable.
func pathKey(path, key string) string {
	plain := key != ""
	for _, c := range key {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			plain = false
			break
		}
	}
	if !plain {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func checkName(name string) error {
	if !conn.ValidName(name) {
		return errors.New("a server name must be " + conn.NameRule + " (it becomes part of the tool names mcp__<server>__<tool>)")
	}
	return nil
}
