package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// parseTOML parses Codex's config.toml: its [mcp_servers.NAME] tables.
// Its other tables and keys are Codex's settings (model, profiles, ...):
// ignored without a warning, since a Codex file holds many.
func (p *parser) parseTOML(data []byte) (*Config, error) {
	p.literal = true
	var top map[string]any
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		return nil, tomlError(data, err)
	}
	order := tomlOrder(md)
	const key = string(MCPServersTOML)
	servers, ok := top[key]
	if !ok {
		hint := ""
		for _, k := range order[""] {
			if s := suggest(k, []string{key}); strings.HasPrefix(s, "did you mean") {
				hint = fmt.Sprintf(" (%s: %s)", pathKey("", k), s)
				break
			}
		}
		return nil, fmt.Errorf("config has no %s table%s: Codex lists each server as a [mcp_servers.NAME] table", key, hint)
	}
	table, ok := servers.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a table of [mcp_servers.NAME] tables, not %s", key, article(tomlKind(servers)))
	}
	if len(table) == 0 {
		return nil, fmt.Errorf("%s is empty: add a [mcp_servers.NAME] table", key)
	}
	names := slices.Clone(order[key])
	for n := range table {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names[len(order[key]):])
	cfg := &Config{Format: MCPServersTOML}
	for _, name := range names {
		path := pathKey(key, name)
		raw, ok := p.tomlRaw(order, key+"\x00"+name, table[name], path)
		if !ok {
			continue // reported
		}
		if s, ok := p.codexServer(path, name, raw); ok {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	return p.finish(cfg, key)
}

// tomlOrder maps every table of md, its key pieces joined with NUL ("" for
// the top), to the names of its members in file order. TOML keeps no
// order in a map; the file's order keeps Env and errors in the order the
// file lists them.
func tomlOrder(md toml.MetaData) map[string][]string {
	order := map[string][]string{}
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		// A dotted key (a.b.c = 1) lists only itself: its tables come
		// first from it.
		for i := 1; i <= len(k); i++ {
			full := strings.Join(k[:i], "\x00")
			if seen[full] {
				continue
			}
			seen[full] = true
			parent := strings.Join(k[:i-1], "\x00")
			order[parent] = append(order[parent], k[i-1])
		}
	}
	return order
}

// tomlRaw turns the TOML value v, at table key in order, into JSON, so
// that Codex's entries are read by the helpers that read JSON ones. A
// value JSON cannot hold (a date, an infinite number) is reported, and
// left out of its table with the array holding it.
func (p *parser) tomlRaw(order map[string][]string, key string, v any, path string) (json.RawMessage, bool) {
	switch v := v.(type) {
	case map[string]any:
		names := slices.Clone(order[key])
		for n := range v { // keys md did not list, if any
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		slices.Sort(names[len(order[key]):])
		var parts []string
		for _, n := range names {
			raw, ok := p.tomlRaw(order, key+"\x00"+n, v[n], pathKey(path, n))
			if !ok {
				continue
			}
			nb, _ := json.Marshal(n)
			parts = append(parts, string(nb)+":"+string(raw))
		}
		return json.RawMessage("{" + strings.Join(parts, ",") + "}"), true
	case []map[string]any:
		elems := make([]any, len(v))
		for i, e := range v {
			elems[i] = e
		}
		return p.tomlRaw(order, key, elems, path)
	case []any:
		parts := make([]string, len(v))
		all := true
		for i, e := range v {
			raw, ok := p.tomlRaw(nil, "", e, fmt.Sprintf("%s[%d]", path, i))
			parts[i], all = string(raw), all && ok
		}
		return json.RawMessage("[" + strings.Join(parts, ",") + "]"), all
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			p.addf("%s must be a finite number, not %v", path, v)
			return nil, false
		}
	case string, bool, int64:
	default:
		p.addf("%s must not be %s: quote it if it is a string", path, article(tomlKind(v)))
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		p.addf("%s: %v", path, err)
		return nil, false
	}
	return b, true
}

// tomlKind names the TOML type of a decoded value.
func tomlKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "table"
	case []any, []map[string]any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	}
	return "date"
}

// quoted matches the double-quoted runs of a TOML parser's message.
var quoted = regexp.MustCompile(`"[^"]*"`)

// tomlError reports a TOML syntax error by line and column. The parser's
// message quotes the text it stopped at, which may be part of a secret
// (an unquoted token in env), so that text is left out.
func tomlError(data []byte, err error) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("config is not valid TOML: %v", err)
	}
	msg := pe.Message
	if start, n := pe.Position.Start, pe.Position.Len; n > 0 && start >= 0 && start+n <= len(data) {
		// The text is a value unless it is the key the parser stopped at.
		if frag := string(data[start : start+n]); !slices.Contains(strings.Split(pe.LastKey, "."), frag) {
			msg = strings.ReplaceAll(msg, frag, "…")
		}
	}
	msg = quoted.ReplaceAllString(msg, `"…"`)
	line, col := position(data, pe.Position.Start)
	if pe.Position.Line > 0 {
		line = pe.Position.Line
	}
	after := ""
	if pe.LastKey != "" {
		after = " (after key " + pe.LastKey + ")"
	}
	return fmt.Errorf("config is not valid TOML: line %d, column %d%s: %s", line, col, after, msg)
}
