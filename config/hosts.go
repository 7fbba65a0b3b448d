package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Gemini CLI's settings.json holds its servers under "mcpServers", as
// Claude's files do, but reads "url" as an SSE endpoint (its Streamable
// HTTP key is "httpUrl"), "timeout" as milliseconds and $VAR as a
// variable, and holds many settings beside the servers. isGemini tells its
// files by those settings and by its own server keys.

// geminiTopKeys are top-level keys of Gemini CLI's settings.json, both
// the nested layout and the older flat one.
var geminiTopKeys = []string{
	"general", "output", "ui", "ide", "privacy", "telemetry", "model", "modelConfigs",
	"context", "tools", "mcp", "security", "advanced", "experimental", "extensions",
	"hooks", "hooksConfig", "admin", "skills", "agents", "useWriteTodos",
	"theme", "customThemes", "selectedAuthType", "useExternalAuth", "coreTools", "excludeTools",
	"allowMCPServers", "excludeMCPServers", "autoAccept", "toolDiscoveryCommand",
	"toolCallCommand", "mcpServerCommand", "contextFileName", "checkpointing",
	"preferredEditor", "vimMode", "usageStatisticsEnabled", "hideTips", "hideBanner",
	"hideWindowTitle", "maxSessionTurns", "fileFiltering", "showMemoryUsage",
	"summarizeToolOutput", "chatCompression", "folderTrust", "includeDirectories",
	"memoryImportFormat", "dnsResolutionOrder", "excludedProjectEnvVars", "disableAutoUpdate",
	"ideMode", "accessibility", "bugCommand",
}

// geminiServerKeys are server keys only Gemini CLI uses.
var geminiServerKeys = []string{"httpUrl", "trust", "tcp", "authProviderType", "targetAudience", "targetServiceAccount", "extensionName"}

// isGemini reports whether the top-level members are those of a Gemini
// CLI settings.json.
func isGemini(top []member) bool {
	for _, m := range top {
		if slices.Contains(geminiTopKeys, m.key) {
			return true
		}
		if m.key != string(MCPServers) {
			continue
		}
		q := &parser{} // the real parse reports malformed entries
		servers, _ := q.object(m.val, m.key)
		for _, s := range servers {
			if kind(s.val) != "object" {
				continue
			}
			keys, _ := q.object(s.val, s.key)
			if slices.ContainsFunc(keys, func(k member) bool { return slices.Contains(geminiServerKeys, k.key) }) {
				return true
			}
		}
	}
	return false
}

// geminiSetting reads the top-level setting m of a Gemini file: the
// server lists of "mcp" ("allowed", "excluded") and of the older
// "allowMCPServers" and "excludeMCPServers". It returns the paths of the
// settings it ignores.
func (p *parser) geminiSetting(m member) []string {
	switch m.key {
	case "allowMCPServers":
		p.allowed = p.nameList(m.val, m.key)
		return nil
	case "excludeMCPServers":
		p.excluded = append(p.excluded, p.nameList(m.val, m.key)...)
		return nil
	case "mcp":
		if kind(m.val) != "object" {
			return []string{m.key}
		}
	default:
		return []string{pathKey("", m.key)}
	}
	members, _ := p.object(m.val, m.key)
	var ignored []string
	for _, sub := range members {
		path := pathKey(m.key, sub.key)
		switch sub.key {
		case "allowed":
			p.allowed = p.nameList(sub.val, path)
		case "excluded":
			p.excluded = append(p.excluded, p.nameList(sub.val, path)...)
		default:
			ignored = append(ignored, path)
		}
	}
	return ignored
}

// nameList parses an array of server names. It is never nil: an empty
// "allowed" list allows no server.
func (p *parser) nameList(raw json.RawMessage, path string) []string {
	if k := kind(raw); k != "array" {
		p.addf("%s must be an array of server names, not %s", path, article(k))
		return []string{}
	}
	var elems []json.RawMessage
	_ = json.Unmarshal(raw, &elems) // raw is a valid JSON array
	out := []string{}
	for i, e := range elems {
		if s, ok := p.str(e, fmt.Sprintf("%s[%d]", path, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// geminiAllows reports whether Gemini's server lists let server name run.
func (p *parser) geminiAllows(serversKey, name string) bool {
	path := pathKey(serversKey, name)
	if slices.Contains(p.excluded, name) {
		p.warnf("%s is excluded (mcp.excluded): not started", path)
		return false
	}
	if p.allowed != nil && !slices.Contains(p.allowed, name) {
		p.warnf("%s is not in mcp.allowed: not started", path)
		return false
	}
	return true
}

// sniff tells a Codex TOML file from a JSON one by its first line: a
// "# comment", a "[table]" header or a "key = value" (or "a.b = value")
// line is TOML; JSON starts with '{', '[' and a value, or a comment.
func sniff(data []byte) hint {
	b := bytes.TrimPrefix(data, []byte("\ufeff"))
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return hint{}
	}
	switch c := b[0]; {
	case c == '#':
		return hint{toml: true}
	case c == '[':
		b = bytes.TrimLeft(b[1:], " \t")
		b = bytes.TrimPrefix(b, []byte("["))
		b = bytes.TrimLeft(b, " \t")
		word := bareKey(b)
		return hint{toml: word != "" && word != "true" && word != "false" && word != "null" && !isDigit(word[0])}
	case bareKeyByte(c):
		word := bareKey(b)
		rest := bytes.TrimLeft(b[len(word):], " \t")
		return hint{toml: len(rest) > 0 && (rest[0] == '=' || rest[0] == '.')}
	}
	return hint{}
}

func bareKey(b []byte) string {
	i := 0
	for i < len(b) && bareKeyByte(b[i]) {
		i++
	}
	return string(b[:i])
}

func bareKeyByte(c byte) bool {
	return c == '_' || c == '-' || isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
