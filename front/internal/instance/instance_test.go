package instance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const limit = 10 * time.Second

func TestSpecCompiles(t *testing.T) {
	if err := Spec().Validate(); err != nil {
		t.Fatal(err)
	}
}

// rig runs instances of one in-memory server on a mock clock.
type rig struct {
	clk     *clock.Mock
	srv     *conntest.Server
	wg      sync.WaitGroup
	mu      sync.Mutex
	started int
	freed   int
	dropped chan struct{}
}

func newRig(t *testing.T) *rig {
	r := &rig{clk: clock.NewMock(), srv: conntest.NewServer(conntest.Accept), dropped: make(chan struct{}, 16)}
	r.srv.AddEchoTool("echo")
	t.Cleanup(func() { r.wg.Wait(); r.srv.Close() })
	return r
}

func (r *rig) options(idle time.Duration) Options {
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 2}
	return Options{Server: "s", Clock: r.clk, Idle: idle, Go: r.wg.Go,
		Start: func(ctx context.Context, observe func(conn.Transition)) (*conn.Supervisor, func(), error) {
			sup, err := conn.Start(ctx, conn.Config{Name: "s", Transport: r.srv.Transport(), Registry: conn.NewRegistry(),
				Reconnect: &p, Clock: r.clk, OnTransition: observe})
			if err != nil {
				return nil, nil, err
			}
			r.mu.Lock()
			r.started++
			r.mu.Unlock()
			return sup, func() { r.mu.Lock(); r.freed++; r.mu.Unlock() }, nil
		},
		Dropped: func() { r.dropped <- struct{}{} },
	}
}

func (r *rig) counts() (started, freed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started, r.freed
}

// Use starts the supervisor once; the last done arms the idle close,
// which a request in between defers; after the close the next use
// starts again; End closes for good.
func TestLifecycle(t *testing.T) {
	r := newRig(t)
	in, err := New(r.options(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sup, started, done, err := in.Use(ctx)
	if err != nil || !started || sup == nil || in.State() != Running {
		t.Fatalf("first use: %v started %v state %s", err, started, in.State())
	}
	if err := sup.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	_, again, done2, _ := in.Use(ctx)
	if again {
		t.Fatal("a second use started another supervisor")
	}
	done()
	r.clk.Add(2 * time.Minute) // one request still holds it
	if in.State() != Running {
		t.Fatalf("closed while a request held it: %s", in.State())
	}
	done2()
	r.clk.Add(59 * time.Second)
	if in.State() != Running {
		t.Fatal("closed before its idle time")
	}
	r.clk.Add(time.Second)
	select {
	case <-r.dropped:
	case <-time.After(limit):
		t.Fatal("not closed after its idle time")
	}
	if in.State() != Idle || in.Running() != nil {
		t.Fatalf("after the idle close: %s", in.State())
	}
	if _, started, done, err := in.Use(ctx); err != nil || !started {
		t.Fatalf("use after the idle close: %v started %v", err, started)
	} else {
		done()
	}
	in.End()
	select {
	case <-r.dropped:
	case <-time.After(limit):
		t.Fatal("not closed at End")
	}
	if _, _, _, err := in.Use(ctx); !errors.Is(err, ErrEnded) {
		t.Fatalf("use after End: %v", err)
	}
	if started, freed := r.counts(); started != 2 || freed != 2 {
		t.Errorf("%d started, %d slots freed; want 2 and 2", started, freed)
	}
}

// A use after the instance's supervisor was closed from outside (a
// reload that restarted its server) frees the old slot before it starts
// a new supervisor: with one slot, the start finds it free. Before, the
// old slot was freed off the goroutine, after the close, so the start
// found the bound reached or not as the goroutines ran (front/sim seed
// 56 under -race: "at most 3 instances" or an instance started).
func TestOutsideCloseFreesTheSlotFirst(t *testing.T) {
	r := newRig(t)
	o := r.options(time.Minute)
	start := o.Start
	o.Start = func(ctx context.Context, observe func(conn.Transition)) (*conn.Supervisor, func(), error) {
		if started, freed := r.counts(); started-freed >= 1 {
			return nil, nil, errors.New("the bound of 1 instance is reached")
		}
		return start(ctx, observe)
	}
	in, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sup, _, done, err := in.Use(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if err := sup.Close(ctx); err != nil { // as the host closes it on a reload
		t.Fatal(err)
	}
	_, started, done, err := in.Use(ctx)
	if err != nil || !started {
		t.Fatalf("use after an outside close: %v, started %v; want a new supervisor in the freed slot", err, started)
	}
	done()
	r.awaitDropped(t)
	in.End()
	r.awaitDropped(t)
	if started, freed := r.counts(); started != 2 || freed != 2 {
		t.Errorf("%d started, %d slots freed; want 2 and 2", started, freed)
	}
}

// A start that fails leaves the instance absent, and the next use
// tries again.
func TestFailedStartStaysAbsent(t *testing.T) {
	r := newRig(t)
	o := r.options(time.Minute)
	fail := errors.New("no slot")
	start := o.Start
	tries := 0
	o.Start = func(ctx context.Context, observe func(conn.Transition)) (*conn.Supervisor, func(), error) {
		if tries++; tries == 1 {
			return nil, nil, fail
		}
		return start(ctx, observe)
	}
	in, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, _, err := in.Use(ctx); !errors.Is(err, fail) || in.State() != Absent {
		t.Fatalf("failed start: %v, state %s", err, in.State())
	}
	_, started, done, err := in.Use(ctx)
	if err != nil || !started {
		t.Fatalf("second use: %v", err)
	}
	done()
	in.End()
	<-r.dropped
}

// An instance closed while a request of its client uses it says so at
// warning level, with the server and the cause, in the logger its owner
// gave it (which names the client); an idle close says so too.
func TestCloseSaysWhy(t *testing.T) {
	r := newRig(t)
	var buf syncBuffer
	o := r.options(time.Minute)
	o.Logger = slog.New(slog.NewTextHandler(&buf, nil)).With("client", 7)
	in, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_, _, done, err := in.Use(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done()
	r.clk.Add(time.Minute)
	r.awaitDropped(t)
	_, _, done, err = in.Use(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in.End() // its request still runs
	done()
	r.awaitDropped(t)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg="per-client instance closed: no request of its client for 1m0s (the instance idle time)" client=7 server=s requests=0`,
		`level=WARN msg="per-client instance closed: its client ended" client=7 server=s requests=1`,
	}
	if len(lines) != len(want) {
		t.Fatalf("log:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i, w := range want {
		if _, rest, _ := strings.Cut(lines[i], " "); rest != w {
			t.Errorf("line %d: %q, want %q", i, rest, w)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// awaitDropped waits for a close of an instance of r to be done.
func (r *rig) awaitDropped(t *testing.T) {
	t.Helper()
	select {
	case <-r.dropped:
	case <-time.After(limit):
		t.Fatal("no close done")
	}
}
