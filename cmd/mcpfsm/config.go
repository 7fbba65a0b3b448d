package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/policy"
)

// Config is a parsed, validated config file.
type Config struct {
	// Servers in the order the file lists them.
	Servers []Server
}

// Server is one entry of "servers". Exactly one of Command and URL is set.
type Server struct {
	Name string

	Command string   // stdio: the program to run
	Args    []string // stdio: its arguments
	Env     []string // stdio: extra KEY=VALUE entries, in file order
	Cwd     string   // stdio: working directory; empty means mcpfsm's

	URL string // Streamable HTTP endpoint

	Reconnect          policy.Policy
	FailOnStartupError bool
	ConnectTimeout     time.Duration // zero: conn.DefaultConnectTimeout
	CallTimeout        time.Duration // zero: conn.DefaultCallTimeout
	CloseTimeout       time.Duration // zero: conn.DefaultCloseTimeout
	KeepAlive          time.Duration // zero: no pings
}

// Lookup returns the server called name.
func (c *Config) Lookup(name string) (Server, bool) {
	for _, s := range c.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// serverKeys are the options of one server, in documentation order.
var serverKeys = []string{
	"command", "args", "env", "cwd", "url", "reconnect", "failOnStartupError",
	"connectTimeoutMs", "callTimeoutMs", "closeTimeoutMs", "keepAliveMs",
}

// stdioOnly are the options that only a "command" server may have.
var stdioOnly = []string{"args", "env", "cwd"}

// LoadConfig reads and parses the config file at path. Its errors are
// those of ParseConfig, prefixed with the file name.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid config:\n%w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses a config file. It rejects unknown keys, duplicate
// keys, values of the wrong type, servers with both or neither of
// "command" and "url", invalid server names and anything after the top
// object. Every problem it finds is reported, joined with errors.Join,
// one per line, each naming its JSON path.
//
// A JSON null for an option means the option is omitted.
func ParseConfig(data []byte) (*Config, error) {
	p := &parser{}
	raw, err := single(data)
	if err != nil {
		return nil, err
	}
	cfg := &Config{}
	top, ok := p.object(raw, "config")
	if !ok {
		return nil, p.err()
	}
	var servers json.RawMessage
	for _, m := range top {
		switch m.key {
		case "servers":
			servers = m.val
		case "mcpServers":
			p.addf(`mcpServers is not a config key (this file lists its servers under "servers")`)
		default:
			p.addf("%s is not a config key (known keys: servers)", pathKey("", m.key))
		}
	}
	if servers == nil || kind(servers) == "null" {
		if servers == nil && len(p.errs) == 0 {
			p.addf(`config must have a "servers" object naming at least one server`)
		} else if servers != nil {
			p.addf("servers must be an object naming at least one server, not null")
		}
		return nil, p.err()
	}
	members, ok := p.object(servers, "servers")
	if ok && len(members) == 0 {
		p.addf("servers is empty: name at least one server")
	}
	for _, m := range members {
		if s, ok := p.server(m.key, m.val); ok {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// single returns the one JSON value of data, rejecting malformed JSON and
// trailing data.
func single(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("config is empty: it must be a JSON object")
		}
		return nil, syntaxError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := dec.InputOffset()
		line, col := position(data, int(off))
		return nil, fmt.Errorf("config has data after its top-level object (line %d, column %d)", line, col)
	}
	return raw, nil
}

func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, int(se.Offset)-1) // Offset is just past the bad byte
		return fmt.Errorf("config is not valid JSON: line %d, column %d: %v", line, col, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("config is not valid JSON: unexpected end of input")
	}
	return fmt.Errorf("config is not valid JSON: %v", err)
}

// position returns the 1-based line and column of byte offset off.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Transport returns the conn transport of s. Server stderr goes to stderr
// (nil discards it).
func (s Server) Transport(stderr io.Writer) conn.Transport {
	if s.URL != "" {
		return conn.Streamable(s.URL)
	}
	t := conn.Command(s.Command, s.Args...)
	t.Env = s.Env
	t.Dir = s.Cwd
	t.Stderr = stderr
	return t
}

// Kind is "stdio" or "http".
func (s Server) Kind() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// Schedule describes the reconnect policy for humans, such as
// "10 attempts, 500ms..30s, gives up after 2m31.5s".
func Schedule(p policy.Policy) string {
	if !p.Enabled {
		return "disabled: a failed or lost connection stays down"
	}
	attempts := "attempts"
	if p.MaxAttempts == 1 {
		attempts = "attempt"
	}
	// Sum the delays: they double until they reach MaxDelay, then stay.
	var total float64 // nanoseconds
	n := 1
	for ; n <= p.MaxAttempts; n++ {
		d := p.Delay(n)
		total += float64(d)
		if d >= p.MaxDelay {
			break
		}
	}
	if n < p.MaxAttempts {
		total += float64(p.MaxAttempts-n) * float64(p.MaxDelay)
	}
	var after string
	if total < float64(math.MaxInt64) {
		after = time.Duration(total).String()
	} else {
		after = fmt.Sprintf("about %.0f years", total/float64(365*24*time.Hour))
	}
	s := fmt.Sprintf("%d %s, %v..%v, gives up after %s", p.MaxAttempts, attempts, p.InitialDelay, p.MaxDelay, after)
	if p.Jitter > 0 {
		s += fmt.Sprintf(" (on average; delays jittered by ±%g%%)", p.Jitter*100)
	}
	return s
}
