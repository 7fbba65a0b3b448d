package config

import (
	"maps"
	"net/http"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/tree"
	"github.com/mcpfsm/mcpfsm/policy"
)

// A dialect is how one host's files spell a server entry: what each key
// sets, in which unit, the keys of other hosts it ignores, the variables
// its strings substitute, and what it settles once every key is read.
// [Load] (or [Parse], from the file's keys) chooses one for the whole
// file: hostDialect, geminiDialect or codexDialect.
type dialect struct {
	// fields are the server keys the dialect reads, each with what it
	// sets; keys are those it documents, in order, for suggestions.
	fields map[string]setter
	keys   []string
	// ignored are other hosts' server keys, with the host that uses
	// them: a warning, not an error.
	ignored map[string]string
	// host and spelling: the keys of mcpfsm's JSON layout that host
	// (Codex) spells otherwise, with its spelling: an error naming it.
	host     string
	spelling map[string]string
	// vars is what the dialect's strings substitute.
	vars vars
	// sseURL: "url" is an SSE endpoint (Gemini CLI), not Streamable HTTP.
	sseURL bool
	// base is an entry before its keys are read: the host's defaults.
	base Server
	// settle, if set, finishes an entry once its type is known.
	settle func(p *parser, e *entry)
	// disabledBy is how an entry says it is left out, for the warning.
	disabledBy string
	// setting reads a top-level key of a JSON file other than the
	// servers' object and "inputs".
	setting func(p *parser, m member)
}

// vars is the variable syntax of a dialect's strings (see expand).
type vars uint8

const (
	noVars    vars = iota // Codex substitutes nothing
	braceVars             // ${VAR}, ${VAR:-default}, ${env:VAR}, ...
	bareVars              // those, and $VAR as Gemini CLI reads it
)

// entry is one server entry while its keys are read.
type entry struct {
	s     Server
	path  string
	has   map[string]bool // its keys with a value that is not null
	given map[string]bool // its keys read so far
	// env is "env", which comes after envFile's entries whatever the
	// file's order.
	env      []string
	sandbox  serverSandbox
	disabled bool
	urlKey   string // the endpoint key given: url, httpUrl or serverUrl
	// Codex's headers, assembled once the type is known (codexHeaders).
	static, fromEnv http.Header
	bearer          *member
}

// A setter reads the value of one server key, at path, into the entry.
type setter func(p *parser, e *entry, m member, path string)

// server parses the entry of server name under the servers object key.
func (p *parser) server(key, name string, v tree.Value) (Server, bool) {
	d := p.d
	e := &entry{s: d.base, path: pathKey(key, name), has: map[string]bool{}, given: map[string]bool{}}
	e.s.Name, e.s.Key, e.s.Reconnect = name, name, policy.Default()
	before := len(p.errs)
	members, ok := p.object(v, e.path)
	if !ok {
		return e.s, false
	}
	for _, m := range members {
		e.has[m.Key] = m.Value.Kind != tree.Null
	}
	for _, m := range members {
		fpath := pathKey(e.path, m.Key)
		set, known := d.fields[m.Key]
		host, ignored := d.ignored[m.Key]
		if m.Value.Kind == tree.Null {
			if !known && !ignored {
				p.unknownKey(e.path, m.Key)
			}
			continue // null means omitted
		}
		e.given[m.Key] = true
		switch {
		case known:
			set(p, e, m, fpath)
		case ignored:
			p.warnf("%s is ignored: mcpfsm does not use it (a key of %s)", fpath, host)
		case d.spelling[m.Key] != "":
			p.addf("%s is not a %s server option: in a %s file give %s", fpath, d.host, d.host, d.spelling[m.Key])
		default:
			p.unknownKey(e.path, m.Key)
		}
	}
	e.s.Env = append(e.s.Env, e.env...)
	p.settleURL(e)
	p.checkType(e.path, &e.s, e.given)
	if o := e.s.OAuth; o != nil && e.s.Type != TypeHTTP {
		p.warnf("%s is ignored: mcpfsm signs in only to Streamable HTTP servers (a url of type http), and this one is %s", pathKey(e.path, o.Key), e.s.Type)
	}
	p.checkPolicy(e.path, &e.s)
	p.settleSandbox(e.path, &e.s, &e.sandbox)
	if d.settle != nil {
		d.settle(p, e)
	}
	if e.disabled {
		p.warnf("%s is disabled (%s): not started", e.path, d.disabledBy)
		return e.s, false
	}
	return e.s, len(p.errs) == before
}

func (p *parser) unknownKey(path, key string) {
	p.addf("%s is not a server option (%s)", pathKey(path, key), suggest(key, p.d.keys))
}

// with returns the fields of base with those of over added or replaced.
func with(base, over map[string]setter) map[string]setter {
	out := maps.Clone(base)
	maps.Copy(out, over)
	return out
}

// The Server fields the duration keys set, each in its unit.
func connectTimeout(s *Server) *time.Duration { return &s.ConnectTimeout }
func callTimeout(s *Server) *time.Duration    { return &s.CallTimeout }
func closeTimeout(s *Server) *time.Duration   { return &s.CloseTimeout }
func keepAlive(s *Server) *time.Duration      { return &s.KeepAlive }

// ms sets field from a whole number of milliseconds, at least lo.
func ms(field func(*Server) *time.Duration, lo float64) setter {
	return func(p *parser, e *entry, m member, path string) { *field(&e.s) = p.millis(m.Value, path, lo) }
}

// sec sets field from a positive number of seconds.
func sec(field func(*Server) *time.Duration) setter {
	return func(p *parser, e *entry, m member, path string) { *field(&e.s) = p.seconds(m.Value, path) }
}
