package config

import "github.com/mcpfsm/mcpfsm/internal/tree"

// Tools are the top-level "toolList" block: how mcpfsm serve lists the
// servers' tools to its clients, read at start (serve's -tools and -pin
// win over it).
//
//	"toolList": {"mode": "search", "pin": ["mcp__fs__read_text_file"]}
type Tools struct {
	// Mode is ToolsFull (or "", every tool listed) or ToolsSearch (a
	// search tool and a call tool).
	Mode string
	// Pin are tools listed as they are in search mode, by the names
	// serve gives them.
	Pin []string
}

// The modes of Tools.
const (
	ToolsFull   = "full"
	ToolsSearch = "search"
)

// toolsKeys are the keys of the "toolList" block. (Not "tools": Gemini
// CLI's settings have a "tools" block of their own.)
var toolsKeys = []string{"mode", "pin"}

// toolsBlock parses the "toolList" block at path.
func (p *parser) toolsBlock(v tree.Value, path string) Tools {
	var t Tools
	members, ok := p.object(v, path)
	if !ok {
		return t
	}
	for _, m := range members {
		fpath := pathKey(path, m.Key)
		switch m.Key {
		case "mode":
			s, ok := p.str(m.Value, fpath)
			if ok && s != ToolsFull && s != ToolsSearch {
				p.addf("%s is %q: give %q (every tool listed) or %q (a search tool and a call tool)", fpath, s, ToolsFull, ToolsSearch)
				continue
			}
			t.Mode = s
		case "pin":
			t.Pin = p.stringArray(m.Value, fpath)
		default:
			p.addf("%s is not a toolList key (%s)", fpath, suggest(m.Key, toolsKeys))
		}
	}
	if len(t.Pin) > 0 && t.Mode != ToolsSearch {
		p.addf(`%s: pin lists tools in search mode only: add "mode": %q, or remove pin`, path, ToolsSearch)
	}
	return t
}
