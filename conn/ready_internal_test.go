package conn

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReadyAfterTheMachineMoved: Ready returns a failed first attempt's
// error only once the connection machine has left connecting, so that a
// caller woken by Ready reads the state the failure led to (a front that
// answers "connecting" for a server that is already retrying tells its
// client nothing of the next attempt).
func TestReadyAfterTheMachineMoved(t *testing.T) {
	var sup atomic.Pointer[Supervisor]
	release := make(chan struct{})
	transport := TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		select { // the first attempt fails once the test holds the supervisor
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, errors.New("refused")
	})
	early := make(chan bool, 1)
	p := policy.Policy{Enabled: true, InitialDelay: time.Minute, MaxDelay: time.Minute, MaxAttempts: 5}
	s, err := Start(context.Background(), Config{Name: "fx", Registry: NewRegistry(), Transport: transport,
		Clock: clock.NewMock(), Reconnect: &p, OnTransition: func(tr Transition) {
			if tr.To != FailedRetrying {
				return
			}
			select { // on the loop: Ready must not have been answered yet
			case <-sup.Load().ready:
				early <- true
			default:
				early <- false
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	sup.Store(s)
	close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var failed *FailedError
	if err := s.Ready(ctx); !errors.As(err, &failed) {
		t.Fatalf("Ready = %v, want a *FailedError", err)
	}
	if got := s.Status().State; got != FailedRetrying {
		t.Errorf("state once Ready returned = %s, want %s", got, FailedRetrying)
	}
	select {
	case e := <-early:
		if e {
			t.Error("Ready was answered before the machine entered failed-retrying")
		}
	case <-ctx.Done():
		t.Fatal("no transition to failed-retrying")
	}
}
