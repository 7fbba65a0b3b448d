//lint:file-ignore SA1019 sampling and roots are deprecated upstream (SEP-2577) but still bridged.

package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capabilities are the client capabilities a 2026-07-28 round trip
// declared in its _meta (io.modelcontextprotocol/clientCapabilities): a
// request of the backend goes to the client in an input_required result
// only if they cover it. The zero value declares nothing known: it
// covers every request (a request without the key, which the SDK's
// server refuses before the front sees it on that protocol).
type Capabilities struct {
	known    bool
	declared map[string]any
}

// CapabilitiesOf reads the client capabilities of a request's _meta.
func CapabilitiesOf(meta map[string]any) Capabilities {
	v, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok || v == nil {
		return Capabilities{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		// Not decoded from JSON: a value made in process.
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, &m) != nil {
			return Capabilities{known: true}
		}
	}
	return Capabilities{known: true, declared: m}
}

// need is the capability req needs of the client: its name, and for a
// URL-mode elicitation the sub-capability "url" too.
func need(req mcp.InputRequest) (name, sub string) {
	switch p := req.(type) {
	case *mcp.ElicitParams:
		if p != nil && p.Mode == "url" {
			return "elicitation", "url"
		}
		return "elicitation", ""
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling", ""
	case *mcp.ListRootsParams:
		return "roots", ""
	}
	return "", ""
}

// covers reports whether c covers the capability name (and sub of it).
func (c Capabilities) covers(name, sub string) bool {
	if !c.known || name == "" {
		return true
	}
	v, ok := c.declared[name]
	if !ok || v == nil {
		return false
	}
	if sub == "" {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[sub]
	return ok
}

// check returns MissingRequiredClientCapabilities (-32021), naming what
// is missing, if c does not cover one of asks.
func (c Capabilities) check(asks []*ask) error {
	missing := map[string]any{}
	for _, a := range asks {
		name, sub := need(a.req)
		if c.covers(name, sub) {
			continue
		}
		if sub != "" {
			missing[name] = map[string]any{sub: map[string]any{}}
		} else {
			missing[name] = map[string]any{}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, n)
	}
	slices.Sort(names)
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": missing}) // maps of strings always marshal
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data, Message: fmt.Sprintf(
		"the server asks for %s, which this request's _meta %q does not declare; declare it to use this tool, prompt or resource",
		strings.Join(names, " and "), mcp.MetaKeyClientCapabilities)}
}

// Declares reports whether the client's current round trip of c declared
// the capability req needs (a URL-mode elicitation needs "elicitation"
// with "url"): an Ask of req would not fail the call.
func (c *Call) Declares(req mcp.InputRequest) bool {
	c.mu.Lock()
	caps := c.caps
	c.mu.Unlock()
	name, sub := need(req)
	return caps.known && caps.covers(name, sub)
}
