package conn_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/policy"
)

const waitLimit = 10 * time.Second

// TestReconnectCallsShareOneAttempt: calls made while an attempt is in
// flight all wait for that attempt and get its outcome, and only one
// transport is opened.
func TestReconnectCallsShareOneAttempt(t *testing.T) {
	for _, tt := range []struct {
		name string
		next conntest.Behaviour
	}{
		{"success", conntest.Accept},
		{"failure", conntest.HeldRefuse},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := conntest.NewServer(conntest.Refuse, tt.next)
			srv.AddEchoTool("echo")
			defer srv.Close()
			rec := conntest.NewRecorder()
			p := policy.Policy{Enabled: true, InitialDelay: time.Second, MaxDelay: time.Second, MaxAttempts: 3}
			sup, err := conn.Start(context.Background(), conn.Config{
				Name: "fx", Transport: srv.Transport(), Registry: conn.NewRegistry(), Reconnect: &p,
				Clock: clock.NewMock(), Logger: rec.Logger(), OnTransition: rec.OnTransition,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sup.Close(context.Background())
			rec.Expect(t, waitLimit, conn.FailedRetrying)
			// The next attempt stays in flight until release: its
			// tools/list is held, or its failed transport's close.
			release := srv.HoldLists()
			defer release()

			const callers = 5
			errs := make(chan error, callers)
			for i := range callers {
				go func() { errs <- sup.Reconnect(context.Background()) }()
				// Wait until this caller waits for the attempt, so that
				// none can arrive after it ended.
				deadline := time.Now().Add(waitLimit)
				for conn.ReconnectWaiters(sup) != i+1 {
					if time.Now().After(deadline) {
						t.Fatalf("caller %d never joined the attempt", i+1)
					}
					runtime.Gosched()
				}
			}
			if tt.next == conntest.HeldRefuse {
				select {
				case ht := <-srv.HeldTransports():
					ht.Release()
				case <-time.After(waitLimit):
					t.Fatal("the attempt's transport never opened")
				}
			}
			release()
			var first error
			for i := range callers {
				select {
				case err := <-errs:
					if i == 0 {
						first = err
					} else if err != first && (err == nil || first == nil || err.Error() != first.Error()) {
						t.Errorf("caller %d got %v, caller 1 got %v", i+1, err, first)
					}
				case <-time.After(waitLimit):
					t.Fatal("a Reconnect never returned")
				}
			}
			if tt.next == conntest.Accept && first != nil {
				t.Errorf("Reconnect = %v, want nil", first)
			}
			var ferr *conn.FailedError
			if tt.next == conntest.HeldRefuse && !errors.As(first, &ferr) {
				t.Errorf("Reconnect = %v, want a *FailedError", first)
			}
			if got := srv.Opens(); got != 2 {
				t.Errorf("opened %d transports, want 2 (the refused one and one shared attempt)", got)
			}
		})
	}
}

func TestReconnectAfterClose(t *testing.T) {
	srv := conntest.NewServer(conntest.Accept)
	defer srv.Close()
	sup, err := conn.Start(context.Background(), conn.Config{
		Name: "fx", Transport: srv.Transport(), Registry: conn.NewRegistry(), Clock: clock.NewMock(), Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sup.Reconnect(context.Background()); !errors.Is(err, conn.ErrClosed) {
		t.Errorf("Reconnect after Close = %v, want ErrClosed", err)
	}
}
