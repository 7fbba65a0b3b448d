package front

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureTools are the tools/list of five real npm servers
// (toolsearch/testdata/servers.json, dumped by its dump.go), under their
// public names; copies is how many times each server stands behind the
// gateway (its copies named server0, server1...).
func fixtureTools(t testing.TB, want int) []*mcp.Tool {
	t.Helper()
	b, err := os.ReadFile("../toolsearch/testdata/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	var servers []struct {
		Name  string      `json:"name"`
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(b, &servers); err != nil {
		t.Fatal(err)
	}
	var out []*mcp.Tool
	for n := 0; want == 0 && n == 0 || len(out) < want; n++ {
		for _, s := range servers {
			for _, tool := range s.Tools {
				if want > 0 && len(out) == want {
					return out
				}
				server := s.Name
				if want > 0 {
					server = fmt.Sprintf("%s%d", s.Name, n)
				}
				cp := *tool
				cp.Name = "mcp__" + server + "__" + tool.Name
				out = append(out, &cp)
			}
		}
	}
	return out
}

// listBytes is the size of a tools/list result of tools, as a host puts
// it into the model's context.
func listBytes(t testing.TB, tools []*mcp.Tool) int {
	b, err := json.Marshal(&mcp.ListToolsResult{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestContextBytes measures what a host pays for tools/list in full and
// in search mode, for five real servers and for a gateway of 500 tools
// (docs/performance.md): search mode lists two tools however many stand
// behind it.
func TestContextBytes(t *testing.T) {
	search := listBytes(t, []*mcp.Tool{searchToolDef(), callToolDef()})
	for _, c := range []struct {
		name  string
		tools []*mcp.Tool
	}{{"five npm servers", fixtureTools(t, 0)}, {"500-tool gateway", fixtureTools(t, 500)}} {
		full := listBytes(t, c.tools)
		// A search's answer: five hits with their schemas, as
		// searchHandler words them.
		var hits []searchHit
		for _, tool := range c.tools[:5] {
			hits = append(hits, searchHit{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema})
		}
		answer, _ := json.Marshal(struct {
			Tools []searchHit `json:"tools"`
		}{hits})
		t.Logf("%s: %d tools; tools/list %d bytes (~%d tokens) in full, %d bytes (~%d tokens) in search mode; one search answering 5 tools ~%d bytes",
			c.name, len(c.tools), full, full/4, search, search/4, len(answer))
		if search*10 > full {
			t.Errorf("%s: search mode lists %d bytes, not a tenth of the full %d", c.name, search, full)
		}
	}
}
