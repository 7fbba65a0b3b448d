package conntest_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

// A script of stimuli on a mock clock: the first attempt is refused, the
// retry succeeds, then the server crashes and the supervisor reconnects.
func Example() {
	srv := conntest.NewServer(conntest.Refuse, conntest.Accept)
	srv.AddEchoTool("echo")
	rec := conntest.NewRecorder()
	clk := clock.NewMock()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxAttempts: 3}
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: conn.NewRegistry(),
		Reconnect: &p, Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		panic(err)
	}
	t := panicT{} // in a real test, the test's own *testing.T
	rec.Expect(t, 10*time.Second, conn.FailedRetrying)
	clk.Add(time.Second)
	rec.Expect(t, 10*time.Second, conn.Connecting, conn.Established)
	srv.Crash()
	// The brief success did not reset the outage budget: this is retry 2.
	rec.Expect(t, 10*time.Second, conn.LostReconnecting)
	clk.Add(2 * time.Second)
	rec.Expect(t, 10*time.Second, conn.Connecting, conn.Established)
	_ = sup.Close(context.Background())
	srv.Close()
	fmt.Println(conntest.Path(rec.Seen()))
	for _, l := range rec.Logs(slog.LevelWarn) {
		fmt.Println(l.Level, l.Msg)
	}
	// Output:
	// connecting -attempt-failed-> failed-retrying -backoff-elapsed-> connecting -connected-> established -connection-lost-> lost-reconnecting -backoff-elapsed-> connecting -connected-> established
	// WARN connection failed; retrying in 1s (attempt 1/3); cause: open transport: generation 1 refused
	// WARN connection lost; reconnecting in 2s (attempt 2/3); cause: the server closed the connection
}

// panicT stands in for a *testing.T in the example.
type panicT struct{}

func (panicT) Helper()                           {}
func (panicT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// startEstablished supervises an accepting server on a mock clock (retries
// every second, 5 attempts) and waits until it is established.
func startEstablished(t *testing.T) (*conntest.Server, *conntest.Recorder, *clock.Mock) {
	t.Helper()
	srv := conntest.NewServer(conntest.Accept)
	srv.AddEchoTool("echo")
	rec := conntest.NewRecorder()
	clk := clock.NewMock()
	p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 5}
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: conn.NewRegistry(),
		Reconnect: &p, Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Cleanup(func() { sup.Close(context.Background()) })
	rec.Expect(t, 10*time.Second, conn.Established)
	return srv, rec, clk
}

func TestPlanAppliesFromTheNextGeneration(t *testing.T) {
	srv, rec, clk := startEstablished(t)
	srv.Plan(conntest.Refuse, conntest.Refuse, conntest.Accept)
	srv.Crash()
	rec.Expect(t, 10*time.Second, conn.LostReconnecting)
	for range 2 {
		clk.Add(time.Second)
		rec.Expect(t, 10*time.Second, conn.Connecting, conn.FailedRetrying)
	}
	clk.Add(time.Second)
	rec.Expect(t, 10*time.Second, conn.Connecting, conn.Established)
	if got := srv.Opens(); got != 4 {
		t.Errorf("Opens = %d, want 4", got)
	}
	var attempts []int
	for _, tr := range rec.Seen() {
		if tr.To == conn.FailedRetrying || tr.To == conn.LostReconnecting {
			attempts = append(attempts, tr.Attempt)
		}
	}
	if diff := cmp.Diff([]int{1, 2, 3}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

// A plan changed after more generations opened than it listed (its last
// behaviour repeating) applies from the next generation too.
func TestPlanAfterTheLastBehaviourRepeated(t *testing.T) {
	srv, rec, clk := startEstablished(t)
	srv.Crash()
	rec.Expect(t, 10*time.Second, conn.LostReconnecting)
	clk.Add(time.Second)
	rec.Expect(t, 10*time.Second, conn.Connecting, conn.Established) // generation 2: Accept repeated
	srv.Plan(conntest.Refuse, conntest.Accept)
	srv.Crash()
	rec.Expect(t, 10*time.Second, conn.LostReconnecting)
	clk.Add(time.Second)
	rec.Expect(t, 10*time.Second, conn.Connecting, conn.FailedRetrying)
	clk.Add(time.Second)
	rec.Expect(t, 10*time.Second, conn.Connecting, conn.Established)
	if got := srv.Opens(); got != 4 {
		t.Errorf("Opens = %d, want 4", got)
	}
}
