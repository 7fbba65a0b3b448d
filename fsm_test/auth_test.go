package fsm_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"golang.org/x/oauth2"
)

// givingUp is an OAuth handler whose login always fails.
type givingUp struct{ tries atomic.Int32 }

func (*givingUp) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }
func (g *givingUp) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	g.tries.Add(1)
	return errors.New("the user closed the login window")
}

// An attempt whose server refuses authorization stops in auth-refused: no
// retry, no budget spent, whatever the clock does, until Close. Any other
// HTTP failure is an ordinary failed attempt.
func TestAuthorizationRefusedIsItsOwnOutcome(t *testing.T) {
	tests := []struct {
		name   string
		status int
		oauth  bool
		path   []conn.State
	}{
		{"401 without a handler", http.StatusUnauthorized, false, []conn.State{conn.AuthRefused}},
		{"403 without a handler", http.StatusForbidden, false, []conn.State{conn.AuthRefused}},
		{"401 after the handler gave up", http.StatusUnauthorized, true, []conn.State{conn.AuthRefused}},
		{"500 is an outage", http.StatusInternalServerError, false, []conn.State{conn.FailedRetrying}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				http.Error(w, http.StatusText(tc.status), tc.status)
			}))
			defer ts.Close()
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			tr := conn.Streamable(ts.URL)
			tr.Client = client
			oauth := &givingUp{}
			if tc.oauth {
				tr.OAuthHandler = oauth
			}
			clk := clock.NewMock()
			rec := conntest.NewRecorder()
			sup, err := conn.Start(context.Background(), conn.Config{
				Name: "fx", Transport: tr, Registry: conn.NewRegistry(), Reconnect: &small,
				Clock: clk, Logger: rec.Logger(), OnTransition: rec.OnTransition,
			})
			if err != nil {
				t.Fatal(err)
			}
			trs := rec.Expect(t, waitLimit, tc.path...)
			last := trs[len(trs)-1]
			var aerr *conn.AuthError
			if refused := errors.As(last.Err, &aerr); refused != (tc.path[0] == conn.AuthRefused) {
				t.Errorf("transition error %v: *AuthError %v, want %v", last.Err, refused, !refused)
			} else if refused && aerr.Status != tc.status {
				t.Errorf("AuthError.Status = %d, want %d", aerr.Status, tc.status)
			}
			if err := sup.Ready(context.Background()); !errors.Is(err, last.Err) {
				t.Errorf("Ready = %v, want the attempt's error %v", err, last.Err)
			}
			if tc.path[0] == conn.AuthRefused {
				before := posts.Load()
				clk.Add(time.Hour)
				rec.NoTransition(t)
				if after := posts.Load(); after != before {
					t.Errorf("%d more requests after the refusal, want none", after-before)
				}
				if st := sup.Status(); st.State != conn.AuthRefused || st.Attempt != 0 {
					t.Errorf("status %+v: want auth-refused with no attempt charged to the budget", st)
				}
				if tc.oauth && oauth.tries.Load() == 0 {
					t.Error("the OAuth handler was never asked")
				}
			}
			if err := sup.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			rec.Expect(t, waitLimit, conn.Disposing, conn.Disposed)
			got := conntest.Path(rec.Seen())
			want := "connecting -attempt-failed-> " + string(tc.path[0]) + " -dispose-> disposing -disposed-> disposed"
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			if tc.path[0] == conn.AuthRefused {
				logs := rec.Logs(slog.LevelError)
				found := false
				for _, l := range logs {
					if strings.HasPrefix(l.Msg, conn.AuthRefused.Phrase()+"; not retrying") {
						found = true
					}
				}
				if !found {
					t.Errorf("no error log with the phrase %q: %v", conn.AuthRefused.Phrase(), logs)
				}
			}
		})
	}
}

// Strict startup returns the refusal from Start.
func TestAuthorizationRefusedFailsStrictStart(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	tr := conn.Streamable(ts.URL)
	tr.Client = client
	_, err := conn.Start(context.Background(), conn.Config{Name: "fx", Transport: tr, Registry: conn.NewRegistry(),
		FailOnStartupError: true, Clock: clock.NewMock(), Logger: conntest.NewRecorder().Logger()})
	var aerr *conn.AuthError
	if !errors.As(err, &aerr) || aerr.Status != http.StatusUnauthorized {
		t.Errorf("Start = %v, want a *conn.AuthError with status 401", err)
	}
}
