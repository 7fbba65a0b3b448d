package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/redact"
	suggestpkg "github.com/mcpfsm/mcpfsm/internal/suggest"
	"github.com/mcpfsm/mcpfsm/internal/tree"
	"github.com/mcpfsm/mcpfsm/policy"
)

// member is one key and value of an object of the file, JSON or TOML.
type member = tree.Member

// parser collects the errors and warnings of one file, read in one
// dialect.
type parser struct {
	opts     Options
	d        *dialect
	errs     []error
	warnings []string
	// allowed and excluded are Gemini CLI's server lists (allowed nil:
	// not given); settings its other settings, ignored.
	allowed, excluded []string
	settings          []string
	// The sandboxes (sandbox.go): the top-level block, the servers that
	// said "sandboxEnabled": false, and the blocks of those that said
	// nothing (for Options.SandboxAll).
	topSandbox   *sandboxBlock
	tools        Tools // the top-level "toolList" block (tools.go)
	unsandboxed  map[string]bool
	serverBlocks map[string]*sandboxBlock
	// keys are the server entries' keys in file order; skipped the
	// invalid entries, whose errors, entryErrs of them, are in errs too.
	keys      []string
	skipped   []SkippedServer
	entryErrs int
}

func (p *parser) addf(format string, a ...any) { p.errs = append(p.errs, fmt.Errorf(format, a...)) }

func (p *parser) warnf(format string, a ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf(format, a...))
}

func (p *parser) err() error { return errors.Join(p.errs...) }

// object returns the members of v, which must be an object, in order. A
// repeated key is reported and dropped.
func (p *parser) object(v tree.Value, path string) ([]member, bool) {
	if v.Kind != tree.Object {
		p.addf("%s must be a JSON object, not %s", path, v.Kind.Article())
		return nil, false
	}
	out := make([]member, 0, len(v.Members))
	for _, m := range v.Members {
		if m.Repeated {
			p.addf("%s is given more than once", pathKey(path, m.Key))
			continue
		}
		out = append(out, m)
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

func (p *parser) str(v tree.Value, path string) (string, bool) {
	if v.Kind != tree.String {
		p.addf("%s must be a string, not %s", path, v.Kind.Article())
		return "", false
	}
	if strings.ContainsRune(v.Text, 0) {
		p.addf("%s must not contain a NUL character", path)
		return "", false
	}
	return v.Text, true
}

// text is str with the dialect's variables substituted.
func (p *parser) text(v tree.Value, path string) (string, bool) {
	s, ok := p.str(v, path)
	if !ok {
		return "", false
	}
	return p.expand(s, path)
}

func (p *parser) nonEmptyString(v tree.Value, path, what string) string {
	s, ok := p.text(v, path)
	if ok && s == "" {
		p.addf("%s must not be empty: give %s", path, what)
	}
	return s
}

func (p *parser) url(v tree.Value, path string) string {
	s, ok := p.text(v, path)
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

// array returns the elements of v, which must be an array of what.
func (p *parser) array(v tree.Value, path, what string) ([]tree.Value, bool) {
	if v.Kind != tree.Array {
		p.addf("%s must be an array of %s, not %s", path, what, v.Kind.Article())
		return nil, false
	}
	return v.Elems, true
}

func (p *parser) stringArray(v tree.Value, path string) []string {
	elems, ok := p.array(v, path, "strings")
	if !ok {
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, _ := p.text(e, tree.Index(path, i))
		out = append(out, s)
	}
	return out
}

func (p *parser) env(v tree.Value, path string) []string {
	members, ok := p.object(v, path)
	if !ok {
		return nil
	}
	var out []string
	for _, m := range members {
		kpath := pathKey(path, m.Key)
		if m.Key == "" || strings.ContainsAny(m.Key, "=\x00") {
			p.addf("%s is not a valid environment variable name: it must be non-empty, without '=' or NUL", kpath)
		}
		switch m.Value.Kind {
		case tree.Null:
			continue // omitted
		case tree.Number: // VS Code allows numbers
			out = append(out, m.Key+"="+m.Value.Text)
			continue
		}
		s, _ := p.text(m.Value, kpath)
		out = append(out, m.Key+"="+s)
	}
	return out
}

func (p *parser) boolean(v tree.Value, path string) bool {
	if v.Kind != tree.Boolean {
		p.addf("%s must be true or false, not %s", path, v.Kind.Article())
		return false
	}
	return v.Text == "true"
}

// number returns the value of v, which must be a number ("of what" for
// the message); ok is false, reported, when it is another kind.
func (p *parser) number(v tree.Value, path, what string) (float64, bool) {
	if v.Kind != tree.Number {
		p.addf("%s must be %s, not %s", path, what, v.Kind.Article())
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Text, 64)
	if err != nil {
		f = -1 // out of range: below any bound
	}
	return f, true
}

// maxMs is the largest accepted duration option, as for policy delays.
const maxMs = policy.DelayLimitMs

// millis parses a whole number of milliseconds, at least lo.
func (p *parser) millis(v tree.Value, path string, lo float64) time.Duration {
	f, ok := p.number(v, path, "a number of milliseconds")
	if !ok {
		return 0
	}
	what := "a positive integer"
	if lo == 0 {
		what = "a non-negative integer"
	}
	if f != math.Trunc(f) || f < lo || f > maxMs {
		p.addf("%s must be %s number of milliseconds, at most %d", path, what, maxMs)
		return 0
	}
	return time.Duration(f) * time.Millisecond
}

// seconds parses a positive number of seconds, as Codex's timeouts are.
func (p *parser) seconds(v tree.Value, path string) time.Duration {
	const limit = maxMs / 1000
	f, ok := p.number(v, path, "a number of seconds")
	if !ok {
		return 0
	}
	if f <= 0 || f > limit {
		p.addf("%s must be a positive number of seconds, at most %d", path, limit)
		return 0
	}
	return time.Duration(f * float64(time.Second)).Round(time.Millisecond)
}

// whole parses a whole number from 1 to hi; fix completes the message.
func (p *parser) whole(v tree.Value, path, what string, hi int, fix string) int {
	n, ok := p.number(v, path, what)
	if !ok {
		return 0
	}
	if n < 1 || n > float64(hi) || n != math.Trunc(n) {
		p.addf("%s must be %s, at most %d; %s", path, what, hi, fix)
		return 0
	}
	return int(n)
}

// pathKey appends key to a dotted path, Go-quoting keys that are not
// plain identifiers so that the path stays readable.
func pathKey(path, key string) string { return tree.Path(path, key) }

// suggest names the known key that key was probably meant to be, or lists
// them all.
func suggest(key string, known []string) string {
	if best, ok := suggestpkg.Closest(key, known); ok {
		return "did you mean " + best + "?"
	}
	return "known keys: " + strings.Join(known, ", ")
}
