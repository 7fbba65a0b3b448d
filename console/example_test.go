package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/console"
)

// fixed is a server whose status never changes.
type fixed conn.Status

func (f fixed) Status() conn.Status               { return conn.Status(f) }
func (fixed) Reconnect(ctx context.Context) error { return nil }

// host runs fixed servers and cannot reload.
type host []console.Server

func (h host) Servers() []console.Server      { return h }
func (host) Reload(ctx context.Context) error { return console.ErrReloadUnsupported }

// A host serves the console; the status command reads it with a Client.
func Example() {
	since := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	h := host{
		fixed{Server: "files", State: conn.Established, MaxAttempts: 10, Since: since, Tools: []string{"mcp__files__read"}},
		fixed{Server: "search", State: conn.Exhausted, Attempt: 10, MaxAttempts: 10, Since: since,
			LastErr: fmt.Errorf(`mcp server "search": connection failed: exit status 3`)},
	}
	cons := console.New(h, console.Options{})
	defer cons.Close()
	srv := httptest.NewServer(cons) // a host would use console.Listen and cons.Serve
	defer srv.Close()

	c := &console.Client{Addr: srv.URL}
	report, err := c.Status(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	report.Now = since.Add(90 * time.Second) // for a stable output
	console.WriteTable(os.Stdout, report)
	// Output:
	// SERVER  STATE        ATTEMPTS  SINCE  CAUSE
	// files   established  0/10      1m30s  -
	// search  exhausted    10/10     1m30s  mcp server "search": connection failed: exit status 3
}
