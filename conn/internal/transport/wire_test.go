package transport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeConn is an mcp.Connection whose reads the test feeds and whose
// writes it records.
type fakeConn struct {
	in     chan jsonrpc.Message
	writes chan *jsonrpc.Request
	closed chan struct{}
	once   sync.Once
}

func newFakeConn() *fakeConn {
	return &fakeConn{in: make(chan jsonrpc.Message, 8), writes: make(chan *jsonrpc.Request, 8), closed: make(chan struct{})}
}

func (f *fakeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-f.in:
		return m, nil
	case <-f.closed:
		return nil, io.EOF
	}
}

func (f *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok {
		f.writes <- r
	}
	return nil
}

func (f *fakeConn) Close() error      { f.once.Do(func() { close(f.closed) }); return nil }
func (f *fakeConn) SessionID() string { return "" }

func newWire(f *fakeConn, broken func(error)) *WireConn {
	return &WireConn{Connection: f, probes: map[jsonrpc.ID]chan *jsonrpc.Response{}, listens: map[jsonrpc.ID]bool{}, broken: broken, ack: NewListenAck()}
}

func id(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	i, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestWireMarksOnlyCallsCarryingTheMark(t *testing.T) {
	f := newFakeConn()
	w := newWire(f, nil)
	ctx := context.Background()
	m := new(Mark)
	if err := w.Write(WithMark(ctx, m), &jsonrpc.Request{Method: "notifications/progress"}); err != nil {
		t.Fatal(err)
	}
	if m.written.Load() {
		t.Error("a notification set the mark")
	}
	other := new(Mark)
	if err := w.Write(WithMark(ctx, other), &jsonrpc.Request{ID: id(t, float64(1)), Method: "tools/call"}); err != nil {
		t.Fatal(err)
	}
	if m.written.Load() || !other.written.Load() {
		t.Errorf("marks after one call: first %v, second %v; want false, true", m.written.Load(), other.written.Load())
	}
}

func TestWireDiedOnDiscover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   bool
		discover bool
		want     bool
	}{
		{"died on the probe", false, true, true},
		{"answered the probe, then died", true, true, false},
		{"died before any probe", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeConn()
			w := newWire(f, nil)
			if tc.discover {
				_ = w.Write(context.Background(), &jsonrpc.Request{ID: id(t, float64(1)), Method: MethodDiscover})
			}
			if tc.answer {
				f.in <- &jsonrpc.Response{ID: id(t, float64(1)), Error: errors.New("method not found")}
				if _, err := w.Read(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
			if _, err := w.Read(context.Background()); !errors.Is(err, io.EOF) {
				t.Fatalf("Read after close: %v", err)
			}
			if got := w.DiedOnDiscover(); got != tc.want {
				t.Errorf("DiedOnDiscover = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWireListenEndedByTheServerIsReported(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		f := newFakeConn()
		var got []error
		w := newWire(f, func(err error) { got = append(got, err) })
		_ = w.Write(context.Background(), &jsonrpc.Request{ID: id(t, float64(7)), Method: MethodSubscriptionsListen})
		if cancelled {
			params, _ := json.Marshal(map[string]any{"requestId": 7})
			_ = w.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		}
		f.in <- &jsonrpc.Response{ID: id(t, float64(7)), Result: json.RawMessage(`{}`)}
		if _, err := w.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := !cancelled; (len(got) == 1) != want {
			t.Errorf("cancelled by the client %v: reported %v, want reported %v", cancelled, got, want)
		}
	}
}

func TestWireProbeIsAnsweredOutOfBand(t *testing.T) {
	f := newFakeConn()
	w := newWire(f, nil)
	reads := make(chan jsonrpc.Message, 4)
	go func() {
		for {
			m, err := w.Read(context.Background())
			if err != nil {
				close(reads)
				return
			}
			reads <- m
		}
	}()
	done := make(chan error, 1)
	go func() { done <- w.Probe(context.Background(), MethodDiscover, map[string]any{}) }()
	var req *jsonrpc.Request
	select {
	case req = <-f.writes:
	case <-time.After(5 * time.Second):
		t.Fatal("the probe was never written")
	}
	if req.Method != MethodDiscover {
		t.Fatalf("probe method %q", req.Method)
	}
	// An error answer is an answer; the SDK never sees it.
	f.in <- &jsonrpc.Response{ID: req.ID, Error: errors.New("method not found")}
	f.in <- &jsonrpc.Request{Method: "notifications/message"}
	if err := <-done; err != nil {
		t.Errorf("probe: %v, want answered", err)
	}
	if m := <-reads; m.(*jsonrpc.Request).Method != "notifications/message" {
		t.Errorf("the SDK read %+v, want the notification only", m)
	}
	go func() { done <- w.Probe(context.Background(), MethodDiscover, map[string]any{}) }()
	f.Close()
	if err := <-done; !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("probe on a closed connection: %v, want ErrConnectionClosed", err)
	}
	for range reads {
	}
}

// A tools/list_changed is signalled as the wire reads it, before the
// message read after it is returned, and only it; Ended tells a failed
// Read.
func TestWireSignalsToolChangesInOrder(t *testing.T) {
	f := newFakeConn()
	w := newWire(f, nil)
	signals := 0
	w.tools = func() { signals++ }
	f.in <- &jsonrpc.Request{Method: "notifications/prompts/list_changed"}
	f.in <- &jsonrpc.Request{Method: notificationToolsChanged}
	f.in <- &jsonrpc.Response{ID: id(t, float64(3)), Result: json.RawMessage(`{}`)}
	for i, want := range []int{0, 1, 1} {
		if _, err := w.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if signals != want {
			t.Errorf("after read %d: %d tool-change signals, want %d", i+1, signals, want)
		}
	}
	if w.Ended() {
		t.Error("Ended before a Read failed")
	}
	_ = f.Close()
	if _, err := w.Read(context.Background()); err == nil {
		t.Fatal("Read after Close: no error")
	}
	if !w.Ended() {
		t.Error("not Ended after a Read failed")
	}
}
