package signin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// DefaultFlowTimeout bounds a sign-in that [Flows] starts: after it the
// authorization URL is no longer answered and the next need starts a
// new sign-in.
const DefaultFlowTimeout = 10 * time.Minute

// FlowsConfig configures [Flows].
type FlowsConfig struct {
	// Timeout bounds each sign-in; zero means DefaultFlowTimeout.
	Timeout time.Duration
	// Show is called each time a sign-in has an authorization URL to show
	// (a step-up shows a second one): serve prints it, opens $BROWSER and
	// asks its client with a URL elicitation. It must not block.
	Show func(ctx context.Context, f *Flow)
	// Ended is called once a sign-in has ended: err is nil when the
	// credential is stored.
	Ended func(f *Flow, err error)
	// Clock bounds the sign-ins; nil means the real clock.
	Clock clock.Clock
	// Logger receives one record per sign-in started and ended; nil
	// means none. No record holds a token, code or verifier, nor the
	// authorization URL's query.
	Logger *slog.Logger
}

// Flows runs the sign-ins mcpfsm starts by itself when a server needs
// one (serve, tools, call): the authorization code flow of [Login], at
// most one per server and subject at a time, each bounded by
// FlowsConfig.Timeout. Flows is safe for concurrent use.
type Flows struct {
	cfg FlowsConfig

	mu      sync.Mutex
	running map[flowKey]*Flow
	wg      sync.WaitGroup
	ctx     context.Context
	stop    context.CancelFunc
}

type flowKey struct{ server, subject string }

// Flow is one sign-in [Flows] runs.
type Flow struct {
	// Server is the config entry's name, Subject whose sign-in it is (""
	// for the operator's own).
	Server, Subject string
	// ID names the sign-in in a URL elicitation (its elicitationId); it
	// is random and no secret.
	ID string

	cancel context.CancelCauseFunc

	mu    sync.Mutex
	url   string
	shown chan struct{} // closed when the flow first has a URL
	done  chan struct{}
	err   error
}

// URL is the authorization URL to open, once the flow has one.
func (f *Flow) URL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.url
}

// Shown is closed once the flow has an authorization URL (URL is then
// not ""); a flow that ends before it has one never closes it.
func (f *Flow) Shown() <-chan struct{} { return f.shown }

// Done is closed when the sign-in has ended.
func (f *Flow) Done() <-chan struct{} { return f.done }

// Err is why the sign-in failed, after Done; nil when it stored the
// credential.
func (f *Flow) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// NewFlows returns a Flows; Close ends its sign-ins.
func NewFlows(cfg FlowsConfig) *Flows {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultFlowTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Flows{cfg: cfg, running: map[flowKey]*Flow{}, ctx: ctx, stop: stop}
}

// ErrFlowsClosed is the error of a sign-in started after [Flows.Close].
var ErrFlowsClosed = errors.New("sign-ins are closed")

// ErrFlowCanceled is the error of a sign-in ended by [Flows.Cancel]: the
// credential came by another way (mcpfsm auth login).
var ErrFlowCanceled = errors.New("sign-in no longer needed")

// Start starts the sign-in lc describes (lc.Open is replaced by
// FlowsConfig.Show), unless one for the same server and subject runs:
// then it returns that one and false.
func (fs *Flows) Start(lc LoginConfig) (*Flow, bool) {
	k := flowKey{lc.Server, lc.Subject}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.running[k]; ok {
		return f, false
	}
	f := &Flow{Server: lc.Server, Subject: lc.Subject, ID: randomID(), shown: make(chan struct{}), done: make(chan struct{})}
	if fs.ctx.Err() != nil {
		f.err = ErrFlowsClosed
		close(f.done)
		return f, false
	}
	fs.running[k] = f
	ctx, cancel := context.WithCancelCause(fs.ctx)
	f.cancel = cancel
	expired := errors.New("sign-in timed out")
	timer := fs.cfg.Clock.AfterFunc(fs.cfg.Timeout, func() { cancel(expired) })
	lc.Open = func(ctx context.Context, authURL string) error {
		f.mu.Lock()
		if f.url == "" {
			close(f.shown)
		}
		f.url = authURL
		f.mu.Unlock()
		if fs.cfg.Show != nil {
			fs.cfg.Show(ctx, f)
		}
		return nil
	}
	fs.log("sign-in started", f)
	fs.wg.Go(func() {
		defer cancel(nil)
		defer timer.Stop()
		_, err := Login(ctx, lc)
		switch cause := context.Cause(ctx); {
		case err == nil:
		case errors.Is(cause, expired):
			err = fmt.Errorf("mcp server %q: no sign-in within %v: the sign-in ended", lc.Server, fs.cfg.Timeout)
		case errors.Is(cause, ErrFlowCanceled):
			err = ErrFlowCanceled
		case fs.ctx.Err() != nil:
			err = ErrFlowsClosed
		}
		fs.mu.Lock()
		delete(fs.running, k)
		fs.mu.Unlock()
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		close(f.done)
		if err != nil {
			fs.log("sign-in ended", f, "err", scrubText(err.Error()))
		} else {
			fs.log("sign-in ended", f, "signed_in", true)
		}
		if fs.cfg.Ended != nil {
			fs.cfg.Ended(f, err)
		}
	})
	return f, true
}

// Pending is the running sign-in of server for subject, or nil.
func (fs *Flows) Pending(server, subject string) *Flow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.running[flowKey{server, subject}]
}

// Cancel ends the sign-in of server for subject, if one runs: its
// credential came by another way.
func (fs *Flows) Cancel(server, subject string) {
	fs.mu.Lock()
	f := fs.running[flowKey{server, subject}]
	fs.mu.Unlock()
	if f != nil {
		f.cancel(ErrFlowCanceled)
	}
}

// Close ends every sign-in and waits for them.
func (fs *Flows) Close() {
	fs.stop()
	fs.wg.Wait()
}

func (fs *Flows) log(msg string, f *Flow, attrs ...any) {
	if fs.cfg.Logger == nil {
		return
	}
	fs.cfg.Logger.Info(msg, append([]any{"server", f.Server, "subject", f.Subject, "sign_in", f.ID}, attrs...)...)
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
