package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/mcpfsm/mcpfsm/internal/tree"
)

// parseTOML parses Codex's config.toml: its [mcp_servers.NAME] tables.
// Its other tables and keys are Codex's settings (model, profiles, ...):
// ignored without a warning, since a Codex file holds many.
func (p *parser) parseTOML(data []byte) (*Config, error) {
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
		return nil, fmt.Errorf("%s must be a table of [mcp_servers.NAME] tables, not %s", key, tomlKind(servers))
	}
	if len(table) == 0 {
		return nil, fmt.Errorf("%s is empty: add a [mcp_servers.NAME] table", key)
	}
	cfg := &Config{Format: MCPServersTOML}
	for _, name := range tomlNames(order, key, table) {
		path := pathKey(key, name)
		before := len(p.errs)
		v, ok := p.tomlValue(order, key+"\x00"+name, table[name], path)
		var s Server
		if ok {
			s, ok = p.server(key, name, v)
		}
		p.take(cfg, name, s, ok, before)
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

// tomlNames are the members of the table at key in order: those the
// decoder's keys list in file order, then any other, sorted.
func tomlNames(order map[string][]string, key string, table map[string]any) []string {
	names := slices.Clone(order[key])
	for n := range table {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names[len(order[key]):])
	return names
}

// tomlValue is the TOML value v, at table key in order, as a value of the
// tree the JSON files are read into, its tables' members in file order. A
// value JSON cannot hold (a date, an infinite number) is reported, and
// left out of its table with the array holding it.
func (p *parser) tomlValue(order map[string][]string, key string, v any, path string) (tree.Value, bool) {
	switch v := v.(type) {
	case map[string]any:
		out := tree.Value{Kind: tree.Object}
		for _, n := range tomlNames(order, key, v) {
			if e, ok := p.tomlValue(order, key+"\x00"+n, v[n], pathKey(path, n)); ok {
				out.Members = append(out.Members, tree.Member{Key: n, Value: e})
			}
		}
		return out, true
	case []map[string]any:
		elems := make([]any, len(v))
		for i, e := range v {
			elems[i] = e
		}
		return p.tomlValue(order, key, elems, path)
	case []any:
		out := tree.Value{Kind: tree.Array, Elems: make([]tree.Value, len(v))}
		all := true
		for i, e := range v {
			var ok bool
			out.Elems[i], ok = p.tomlValue(nil, "", e, tree.Index(path, i))
			all = all && ok
		}
		return out, all
	case string:
		return tree.Value{Kind: tree.String, Text: v}, true
	case bool:
		return tree.Value{Kind: tree.Boolean, Text: strconv.FormatBool(v)}, true
	case int64:
		return tree.Value{Kind: tree.Number, Text: strconv.FormatInt(v, 10)}, true
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			p.addf("%s must be a finite number, not %v", path, v)
			return tree.Value{}, false
		}
		text, _ := json.Marshal(v) // a finite number, as a JSON file writes it
		return tree.Value{Kind: tree.Number, Text: string(text)}, true
	}
	p.addf("%s must not be %s: quote it if it is a string", path, tomlKind(v))
	return tree.Value{}, false
}

// tomlKind names the TOML type of a decoded value, for a message.
func tomlKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	}
	return "a date"
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
