package console

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// stream reads the "status" events of /api/events.
type stream struct {
	t      *testing.T
	events chan StatusReport
	cancel context.CancelFunc
}

func openStream(t *testing.T, url string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		cancel()
		t.Fatalf("/api/events: %d %q", resp.StatusCode, ct)
	}
	s := &stream{t: t, events: make(chan StatusReport, 1024), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "status":
				var r StatusReport
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil {
					t.Errorf("event data: %v", err)
				}
				s.events <- r
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// until waits for an event whose first server is in state, with the
// transition into it in its history. (A supervisor updates its status just
// before it reports the transition, so one event may show the state and
// the next one its transition.)
func (s *stream) until(state string) StatusReport {
	s.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case r := <-s.events:
			if len(r.Servers) == 0 || r.Servers[0].State != state {
				continue
			}
			if tr := r.Servers[0].Transitions; len(tr) > 0 && tr[len(tr)-1].To == state {
				return r
			}
		case <-deadline:
			s.t.Fatalf("no status event with state %s within %v", state, wait)
		}
	}
}

// establishedStream starts one established server "alpha" and follows the
// console's event stream until it shows it.
func establishedStream(t *testing.T) (*testHost, *testServer, *stream) {
	t.Helper()
	h := newTestHost(t, Options{})
	s := h.add("alpha", 3)
	s.rec.Expect(t, wait, conn.Established)
	srv := httptest.NewServer(h.cons)
	t.Cleanup(srv.Close) // after the stream's cleanup, which ends its request
	ev := openStream(t, srv.URL)
	ev.until("established")
	return h, s, ev
}

func TestEventsFollowTransitions(t *testing.T) {
	h, s, ev := establishedStream(t)

	s.srv.Crash()
	r := ev.until("lost-reconnecting")
	if got := r.Servers[0]; got.Attempt != 1 || !got.NextRetry.Equal(h.clk.Now().Add(time.Second)) {
		t.Errorf("lost: attempt %d next retry %v", got.Attempt, got.NextRetry)
	}
	h.clk.Add(time.Second)
	r = ev.until("established")
	if n := len(r.Servers[0].Transitions); n != 4 {
		t.Errorf("%d transitions, want 4", n)
	}
}

func TestEventsFollowToolChanges(t *testing.T) {
	_, s, ev := establishedStream(t)
	s.srv.AddEchoTool("second") // list_changed: a re-sync, no transition
	deadline := time.After(wait)
	for {
		select {
		case r := <-ev.events:
			if r.Servers[0].ToolCount == 2 {
				return
			}
		case <-deadline:
			t.Fatal("no event with two tools")
		}
	}
}

func TestCloseEndsStreams(t *testing.T) {
	h := newTestHost(t, Options{})
	h.add("alpha", 3, conntest.Refuse).rec.Expect(t, wait, conn.FailedRetrying)
	srv := httptest.NewServer(h.cons)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "event: status\n" {
		t.Fatalf("first line %q", line)
	}
	h.cons.Close()
	done := make(chan error, 1)
	go func() {
		_, err := br.ReadString(0) // reads to the end of the stream
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("the event stream did not end after Close")
	}
}
