package config

import (
	"bytes"
	"slices"

	"github.com/mcpfsm/mcpfsm/internal/tree"
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
		if slices.Contains(geminiTopKeys, m.Key) {
			return true
		}
		if m.Key != string(MCPServers) {
			continue
		}
		for _, s := range m.Value.Members {
			if s.Repeated {
				continue // the first entry is the one read
			}
			if slices.ContainsFunc(s.Value.Members, func(k member) bool { return slices.Contains(geminiServerKeys, k.Key) }) {
				return true
			}
		}
	}
	return false
}

// geminiSetting reads the top-level setting m of a Gemini file: the
// server lists of "mcp" ("allowed", "excluded") and of the older
// "allowMCPServers" and "excludeMCPServers". The paths of the settings it
// ignores are kept for one warning.
func geminiSetting(p *parser, m member) {
	switch m.Key {
	case "allowMCPServers":
		p.allowed = p.nameList(m.Value, m.Key)
		return
	case "excludeMCPServers":
		p.excluded = append(p.excluded, p.nameList(m.Value, m.Key)...)
		return
	case "mcp":
		if m.Value.Kind != tree.Object {
			p.settings = append(p.settings, m.Key)
			return
		}
	default:
		p.settings = append(p.settings, pathKey("", m.Key))
		return
	}
	members, _ := p.object(m.Value, m.Key)
	for _, sub := range members {
		path := pathKey(m.Key, sub.Key)
		switch sub.Key {
		case "allowed":
			p.allowed = p.nameList(sub.Value, path)
		case "excluded":
			p.excluded = append(p.excluded, p.nameList(sub.Value, path)...)
		default:
			p.settings = append(p.settings, path)
		}
	}
}

// nameList parses an array of server names. It is never nil: an empty
// "allowed" list allows no server.
func (p *parser) nameList(v tree.Value, path string) []string {
	elems, _ := p.array(v, path, "server names")
	out := []string{}
	for i, e := range elems {
		if s, ok := p.str(e, tree.Index(path, i)); ok {
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
