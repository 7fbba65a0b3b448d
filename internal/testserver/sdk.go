package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// crashMarker is in the crash tool's reply; the stdout writer exits the
// process right after writing it.
const crashMarker = "crashing-now-7f3a"

type echoArgs struct {
	Text string `json:"text"`
}

// serveSDK is the well-behaved server, built on the go-sdk server API.
func serveSDK(o options) error {
	t := &mcp.IOTransport{Reader: os.Stdin, Writer: crashWriter{w: os.Stdout, delay: o.crashDelay}}
	return newServer(o).Run(context.Background(), t)
}

// serveHTTP serves the same server over Streamable HTTP on a free loopback
// port, and prints its URL.
func serveHTTP(o options) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := newServer(o)
	fmt.Fprintf(os.Stderr, "testserver: listening http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: o.stateless}))
}

func newServer(o options) *mcp.Server {
	var srv *mcp.Server
	opts := &mcp.ServerOptions{PageSize: 500}
	// The changes start after initialization, or on protocol 2026-07-28,
	// which has none, after the first tools/list is answered.
	var once sync.Once
	startChanges := func() {
		once.Do(func() {
			if o.storm > 0 {
				go storm(srv, o.storm)
			}
			if o.flapEvery > 0 {
				go flap(srv, o.flapEvery)
			}
		})
	}
	opts.InitializedHandler = func(context.Context, *mcp.InitializedRequest) { startChanges() }
	var session func(*mcp.Server)
	if o.session {
		session = addSession(opts)
	}
	srv = mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "v1"}, opts)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if o.recordMeta && !strings.HasPrefix(method, "notifications/") {
				recordMeta(method, req)
			}
			if o.refuseInit && method == "initialize" {
				return nil, &jsonrpc.Error{Code: -32022, Message: "Unsupported protocol version: this server speaks 2026-07-28 only"}
			}
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				startChanges()
			}
			return res, err
		}
	})
	if session != nil {
		session(srv)
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return text(a.Text), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "replies, then exits"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(crashMarker), nil, nil
		})
	for i := range o.tools {
		addStatic(srv, fmt.Sprintf("extra_%05d", i))
	}
	if o.probes {
		addProbes(srv)
	}
	if o.badNames {
		for _, n := range badNames() {
			addStatic(srv, n)
		}
	}
	return srv
}

// badNames are raw names that need normalising, truncating or both.
func badNames() []string {
	return []string{
		"has space",
		"dotted.name",
		"dotted:name", // normalises like dotted.name: only the hash tells them apart
		"slash/and\\back",
		"ünïcödé",
		strings.Repeat("long", 30),       // 120 valid characters
		strings.Repeat("long", 30) + "!", // same prefix, one more
		strings.Repeat("x", 64),          // valid characters, too long with the prefix
		"emoji-\U0001F600",
	}
}

func addStatic(srv *mcp.Server, name string) {
	srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(name), nil
		})
}

// storm changes the tool list n times, alternately adding and removing the
// tool "storm", then adds "storm_done": a client that has seen storm_done
// has seen a list after the storm.
func storm(srv *mcp.Server, n int) {
	for i := range n {
		if i%2 == 0 {
			addStatic(srv, "storm")
		} else {
			srv.RemoveTools("storm")
		}
	}
	addStatic(srv, "storm_done")
}

// flap adds and removes the tool "flap" every d, until the process ends.
func flap(srv *mcp.Server, d time.Duration) {
	for on := true; ; on = !on {
		time.Sleep(d)
		if on {
			addStatic(srv, "flap")
		} else {
			srv.RemoveTools("flap")
		}
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// crashWriter is stdout; once it has written the crash tool's reply, the
// process exits (after delay), as a server crashing right after answering
// would.
type crashWriter struct {
	w     io.Writer
	delay time.Duration
}

func (c crashWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if bytes.Contains(p, []byte(crashMarker)) {
		if c.delay <= 0 {
			os.Exit(4)
		}
		time.AfterFunc(c.delay, func() { os.Exit(4) })
	}
	return n, err
}

func (crashWriter) Close() error { return nil }

// recordMeta prints what a request carried for its trace: its method,
// its _meta and, over HTTP, its traceparent header, as one JSON line.
func recordMeta(method string, req mcp.Request) {
	rec := struct {
		Method      string         `json:"method"`
		Meta        map[string]any `json:"meta,omitempty"`
		Traceparent string         `json:"traceparent,omitempty"`
	}{Method: method}
	if p := req.GetParams(); p != nil {
		rec.Meta = p.GetMeta()
	}
	if e := req.GetExtra(); e != nil && e.Header != nil {
		rec.Traceparent = e.Header.Get("Traceparent")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"method":%q,"error":%q}`, method, err))
	}
	fmt.Fprintf(os.Stderr, "testserver: meta %s\n", b)
}
