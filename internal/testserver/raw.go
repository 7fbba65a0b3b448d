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
	} `json:"params"`
}

// serveDuplicate is a hand-rolled JSON-RPC server (the SDK server dedupes
// tools) whose tools/list answer names the tool "dup" twice.
func serveDuplicate() error {
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	schema := map[string]any{"type": "object"}
	for sc.Scan() {
		var req rawRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("bad request: %w", err)
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{
				"protocolVersion": req.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "testserver-dup", "version": "v1"},
			}
		case "tools/list":
			result = map[string]any{"tools": []any{
				map[string]any{"name": "dup", "inputSchema": schema},
				map[string]any{"name": "other", "inputSchema": schema},
				map[string]any{"name": "dup", "inputSchema": schema},
			}}
		case "ping":
			result = map[string]any{}
		default:
			if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32601, "message": "method not found: " + req.Method}}); err != nil {
				return err
			}
			continue
		}
		if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}); err != nil {
			return err
		}
	}
	return sc.Err()
}
