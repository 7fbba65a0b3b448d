package front

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/mcpfsm/mcpfsm/authz"
	"github.com/mcpfsm/mcpfsm/conn"
)

// fakeBackends is Backends over supervisors a test started: the shared
// instances by name, and per-client instances made by start.
type fakeBackends struct {
	mu     sync.Mutex
	shared map[string]*conn.Supervisor
	status func(server string) (conn.Status, bool) // overrides the shared instances' status
	iso    map[string]int                          // per-client servers' maxInstances; absent: shared
	start  func(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error)

	started []*conn.Supervisor // the per-client instances perClient started, in order
	asked   int                // the instances the front asked for, counted before each start
	guards  map[string]authz.Guard
}

func (b *fakeBackends) Guard(server string) authz.Guard {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.guards[server]
}

// setGuard gives server a per-caller rules.
func (b *fakeBackends) setGuard(server string, p authz.Guard) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.guards == nil {
		b.guards = map[string]authz.Guard{}
	}
	b.guards[server] = p
}

func newFakeBackends() *fakeBackends {
	return &fakeBackends{shared: map[string]*conn.Supervisor{}, iso: map[string]int{}}
}

// set makes sup the shared instance of server.
func (b *fakeBackends) set(server string, sup *conn.Supervisor) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shared[server] = sup
}

func (b *fakeBackends) StatusOf(server string) (conn.Status, bool) {
	if b.status != nil {
		return b.status(server)
	}
	if sup, ok := b.Supervisor(server); ok {
		return sup.Status(), true
	}
	return conn.Status{}, false
}

func (b *fakeBackends) Supervisor(server string) (*conn.Supervisor, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sup, ok := b.shared[server]
	return sup, ok && sup != nil
}

func (b *fakeBackends) Supervisors() []*conn.Supervisor {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*conn.Supervisor
	for _, sup := range b.shared {
		if sup != nil {
			out = append(out, sup)
		}
	}
	return out
}

func (b *fakeBackends) Isolation(server string) (shared bool, maxInstances int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.iso[server]
	return !ok, n
}

func (b *fakeBackends) StartInstance(ctx context.Context, server string, configure func(*conn.Config)) (*conn.Supervisor, error) {
	if b.start == nil {
		return nil, errors.New("no instances in this test")
	}
	return b.start(ctx, server, configure)
}

// bridgesLeft counts the bridged calls of every client.
func (f *Front) bridgesLeft() int {
	n := 0
	for _, c := range f.all() {
		n += c.bridges.Len()
	}
	return n
}

// subjectHeader names the caller of a test's request (testSubject).
const subjectHeader = "X-Test-Subject"

// testSubject is the HTTPOptions.Subject of the tests: the caller the
// request's subjectHeader names.
func testSubject(r *http.Request) string { return r.Header.Get(subjectHeader) }

// asSubject is an HTTP client whose requests are subject's.
func asSubject(subject string) *http.Client {
	return &http.Client{Transport: subjectTransport{subject}}
}

type subjectTransport struct{ subject string }

func (s subjectTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(subjectHeader, s.subject)
	return http.DefaultTransport.RoundTrip(r)
}

// perClient makes server isolated per client in b, each instance a
// supervisor of base's config (its Name is server's).
func (b *fakeBackends) perClient(server string, base func() conn.Config) {
	b.starter(base)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.iso[server] = 0
}

// starter makes b start instances (per-client ones, and a shared
// server's 2026-07-28 one) as supervisors of base's config (its Name is
// the server's).
func (b *fakeBackends) starter(base func() conn.Config) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.start = func(ctx context.Context, name string, configure func(*conn.Config)) (*conn.Supervisor, error) {
		b.mu.Lock()
		b.asked++
		b.mu.Unlock()
		c := base()
		c.Name = name
		configure(&c)
		sup, err := conn.Start(ctx, c)
		if err == nil {
			b.mu.Lock()
			b.started = append(b.started, sup)
			b.mu.Unlock()
		}
		return sup, err
	}
}

// instances returns the instances started so far.
func (b *fakeBackends) instances() []*conn.Supervisor {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*conn.Supervisor(nil), b.started...)
}

// maxInstances bounds server's per-client instances.
func (b *fakeBackends) maxInstances(server string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.iso[server] = n
}
