package signin

import (
	"fmt"
	"html"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// callbackResult is what a redirect brought.
type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// Redirects receives the redirects of sign-ins: an http.Handler to serve
// at a sign-in's redirect URL (a loopback listener's /callback, or a
// gateway's own address). Each sign-in waits for the one redirect that
// carries its state; that state is single use, bound to the subject the
// sign-in is for, and expires. A redirect with any other state (unknown,
// used, expired, tampered with) is refused with 400 and the sign-ins go
// on waiting. Redirects is safe for concurrent use.
type Redirects struct {
	clock clock.Clock

	mu    sync.Mutex
	waits map[string]*redirectWait
}

type redirectWait struct {
	subject string
	ch      chan callbackResult
	timer   *clock.Timer
}

// NewRedirects returns an empty Redirects whose states expire by clk (nil
// means the real clock).
func NewRedirects(clk clock.Clock) *Redirects {
	if clk == nil {
		clk = clock.New()
	}
	return &Redirects{clock: clk, waits: map[string]*redirectWait{}}
}

// expect starts waiting for the redirect that carries state, for
// subject's sign-in. The channel gets the redirect, or is closed when
// ttl (if positive) passes first: the state is then no longer accepted.
// done forgets the state.
func (r *Redirects) expect(state, subject string, ttl time.Duration) (<-chan callbackResult, func()) {
	w := &redirectWait{subject: subject, ch: make(chan callbackResult, 1)}
	r.mu.Lock()
	if state != "" {
		r.waits[state] = w
	}
	r.mu.Unlock()
	if ttl > 0 && state != "" {
		w.timer = r.clock.AfterFunc(ttl, func() {
			if r.take(state, w) {
				close(w.ch)
			}
		})
	}
	return w.ch, func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		r.take(state, w)
	}
}

// take removes state's wait if it is still w.
func (r *Redirects) take(state string, w *redirectWait) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits[state] != w {
		return false
	}
	delete(r.waits, state)
	return true
}

// Pending reports how many sign-ins wait for their redirect.
func (r *Redirects) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waits)
}

// ServeHTTP hands the redirect to the sign-in whose state it carries.
func (r *Redirects) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	state := q.Get("state")
	r.mu.Lock()
	wait, ok := r.waits[state]
	if ok && state != "" {
		delete(r.waits, state) // single use
	}
	r.mu.Unlock()
	if !ok || state == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, page("This sign-in link is not the one mcpfsm is waiting for (its state does not match, or it was used or has expired). Start the sign-in again from mcpfsm."))
		return
	}
	if wait.timer != nil {
		wait.timer.Stop()
	}
	if e := q.Get("error"); e != "" {
		wait.ch <- callbackResult{err: fmt.Errorf("the authorization server refused the sign-in: %s", oneWord(e))}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, page("The sign-in was refused ("+html.EscapeString(oneWord(e))+"). You can close this window."))
		return
	}
	wait.ch <- callbackResult{res: &auth.AuthorizationResult{Code: q.Get("code"), State: state, Iss: q.Get("iss")}}
	fmt.Fprint(w, page("Signed in. You can close this window and return to mcpfsm."))
}
