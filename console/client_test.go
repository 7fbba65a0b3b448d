package console

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

func TestClient(t *testing.T) {
	h := newTestHost(t, Options{Token: testToken})
	a := h.add("alpha", 2)
	b := h.add("beta", 2, conntest.Refuse)
	a.rec.Expect(t, wait, conn.Established)
	b.rec.Expect(t, wait, conn.FailedRetrying)
	h.clk.Add(90 * time.Second / 100) // not yet the retry
	srv := httptest.NewServer(h.cons)
	defer srv.Close()
	ctx := context.Background()

	c := &Client{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: testToken}
	r, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	want := `SERVER  STATE            ATTEMPTS  SINCE  CAUSE
alpha   established      0/2       1s     -
beta    failed-retrying  1/2       1s     mcp server "beta": connection failed: open transport: generation 1 refused
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	if _, err := (&Client{Addr: c.Addr}).Status(ctx); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("without the token: %v, want an error naming the token", err)
	}
	if _, err := c.Reconnect(ctx, "nope"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
	res, err := c.Reconnect(ctx, "beta")
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 502 || !strings.Contains(ae.Message, "refused") || res != nil {
		t.Errorf("failing reconnect: %v %+v", err, res)
	}
	b.srv.Plan(conntest.Accept)
	// At once again: held back (ReconnectInterval); after it, beta's own
	// retry connects first.
	if _, err := c.Reconnect(ctx, "beta"); !errors.As(err, &ae) || ae.StatusCode != 429 {
		t.Errorf("reconnect again at once: %v, want a 429 APIError", err)
	}
	b.rec.Expect(t, wait, conn.Connecting, conn.FailedRetrying) // the failed reconnect
	h.clk.Add(max(ReconnectInterval, b.Status().Delay))
	b.rec.Expect(t, wait, conn.Connecting, conn.Established)
	res, err = c.Reconnect(ctx, "beta")
	if err != nil || res.Server.State != "established" {
		t.Errorf("reconnect: %v %+v", err, res)
	}
	all, err := c.ReconnectAll(ctx)
	if err != nil || len(all.Results) != 2 {
		t.Errorf("reconnect all: %v %+v", err, all)
	}
	if err := c.Reload(ctx); err != nil {
		t.Errorf("reload: %v", err)
	}
}

func TestClientNoHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = (&Client{Addr: addr}).Status(context.Background())
	if !errors.Is(err, ErrNoHost) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "-http") {
		t.Errorf("no host: %v; want ErrNoHost naming the address and -http", err)
	}
	if _, err := (&Client{}).Status(context.Background()); err == nil || !strings.Contains(err.Error(), EnvAddr) {
		t.Errorf("no address: %v, want an error naming %s", err, EnvAddr)
	}
}

func TestClientNotAConsole(t *testing.T) {
	srv := httptest.NewServer(nil) // the default mux: 404 text for everything
	defer srv.Close()
	_, err := (&Client{Addr: srv.URL}).Status(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is this an mcpfsm console?") {
		t.Errorf("not a console: %v", err)
	}
}
