package front

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

// Every event stream of the HTTP handler starts with an SSE retry field
// (DefaultSSERetry, in milliseconds), before its first event, on both
// eras; a JSON answer has none.
func TestEventStreamsCarryARetryField(t *testing.T) {
	r := newRelayRigWith(t, relayOptions{protocol: conn.ClassicProtocolVersion})
	req, err := http.NewRequest(http.MethodPost, r.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("initialize answered %s, want an event stream: %s", ct, b)
	}
	if body := string(b); !strings.HasPrefix(body, "retry: 1000\n\n") || !strings.Contains(body, `"result"`) {
		t.Errorf("the 2025-11-25 stream:\n%s\nwant it to start with \"retry: 1000\" and still carry the result", body)
	}
	_, body := postWith(t, r.url, "tools/call", "meta", `"name":"meta","arguments":{}`, `{}`)
	if !strings.HasPrefix(body, "retry: 1000\n\n") || !strings.Contains(body, `"result"`) {
		t.Errorf("the 2026-07-28 stream:\n%s\nwant it to start with \"retry: 1000\" and still carry the result", body)
	}
}
