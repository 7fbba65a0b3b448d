package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// serveGarbage answers every line, and the start, with non-JSON garbage.
func serveGarbage() error {
	fmt.Println("this is not JSON-RPC }{")
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		fmt.Println("garbage \x00\x01 {not json")
	}
	return sc.Err()
}

type rawRequest struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Text string `json:"text"`
		} `json:"arguments"`
	} `json:"params"`
}

// JSON-RPC error codes the raw server answers with.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// serveRaw is a hand-rolled JSON-RPC server over stdin and stdout, for
// behaviour the SDK server will not play:
//
//   - -duplicate-tools: tools/list names the tool "dup" twice (the SDK
//     server dedupes tools);
//   - -raw-protocol VERSION: initialize is answered with VERSION whatever
//     the client asked for, as a server that only speaks VERSION would;
//   - -hang-after N: after answering N requests other than ping (and
//     server/discover, which no count below includes), it answers
//     nothing at all, pings included, but keeps reading stdin, as a
//     deadlocked server whose pipe stays open would; with -hang-no-read it
//     stops reading stdin too;
//   - -close-stdout-after N: after answering N requests other than ping, it
//     closes stdout and blocks;
//   - -exit-after-answers N: it exits right after answering N requests
//     other than ping.
//
// Otherwise it lists one tool, echo, and answers initialize with the
// client's version. Every request is logged to stderr as "testserver:
// request METHOD PROTOCOLVERSION"; unknown methods get a method-not-found
// error.
func serveRaw(o options) error {
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	schema := map[string]any{"type": "object"}
	tools := []any{map[string]any{"name": "echo", "description": "returns its text argument",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}
	if o.duplicate {
		tools = []any{
			map[string]any{"name": "dup", "inputSchema": schema},
			map[string]any{"name": "other", "inputSchema": schema},
			map[string]any{"name": "dup", "inputSchema": schema},
		}
	}
	answered := 0
	for sc.Scan() {
		var req rawRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("bad request: %w", err)
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		fmt.Fprintf(os.Stderr, "testserver: request %s %s\n", req.Method, req.Params.ProtocolVersion)
		if o.hangAfter > 0 && answered >= o.hangAfter {
			if o.hangNoRead {
				select {} // hung: read nothing more either
			}
			continue // hung: read on, answer nothing
		}
		// ping and the probe of protocol 2026-07-28 (refused: this is a
		// classic server) are not counted, so N means the same on both.
		uncounted := req.Method == "ping" || req.Method == "server/discover"
		if !uncounted {
			answered++
		}
		var result any
		var rpcErr map[string]any
		switch req.Method {
		case "initialize":
			version := req.Params.ProtocolVersion
			if o.rawProtocol != "" {
				version = o.rawProtocol
			}
			result = map[string]any{
				"protocolVersion": version,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "testserver-raw", "version": "v1"},
			}
		case "tools/list":
			result = map[string]any{"tools": tools}
		case "tools/call":
			if req.Params.Name != "echo" || o.duplicate {
				rpcErr = map[string]any{"code": codeInvalidParams, "message": "unknown tool: " + req.Params.Name}
				break
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": req.Params.Arguments.Text}}}
		case "ping":
			result = map[string]any{}
		default:
			rpcErr = map[string]any{"code": codeMethodNotFound, "message": "method not found: " + req.Method}
		}
		msg := map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}
		if rpcErr != nil {
			msg = map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr}
		}
		if err := enc.Encode(msg); err != nil {
			return err
		}
		if uncounted {
			continue
		}
		if answered == o.exitAnswers {
			os.Exit(3)
		}
		if answered == o.closeStdout {
			os.Stdout.Close()
			select {} // alive, its stdout gone
		}
	}
	return sc.Err()
}
