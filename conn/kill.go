package conn

import (
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/conn/internal/transport"
)

// killWait bounds how long a Close whose context ended waits for the
// processes it killed to be reaped. SIGKILL is sent before Close returns,
// so they die even if the host exits at once.
const killWait = time.Second

// processes is the set of a supervisor's transports that own a process not
// yet confirmed gone. Close kills them all at once when its context ends
// before disposal does (a host's second interrupt, or its own deadline):
// no server process outlives a host that gives up waiting.
type processes struct {
	mu sync.Mutex
	m  map[Terminator]struct{}
}

func (p *processes) add(t Terminator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[Terminator]struct{}{}
	}
	p.m[t] = struct{}{}
}

func (p *processes) remove(t Terminator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, t)
}

// killAll kills every process now, skipping the grace periods, and waits
// at most killWait for them to be gone.
func (p *processes) killAll() {
	p.mu.Lock()
	var gone []<-chan struct{}
	for t := range p.m {
		gone = append(gone, killNow(t))
	}
	p.mu.Unlock()
	timer := time.NewTimer(killWait)
	defer timer.Stop()
	for _, c := range gone {
		select {
		case <-c:
		case <-timer.C:
			return
		}
	}
}

// killNow terminates t with no grace period: for the package's own
// transports the process group is SIGKILLed before it returns.
func killNow(t Terminator) <-chan struct{} {
	return terminateWithin(t, time.Nanosecond) // no room for a grace period
}

// terminateWithin terminates t so that it ends within d if it can.
func terminateWithin(t Terminator, d time.Duration) <-chan struct{} {
	if bt, ok := t.(transport.Owned); ok {
		return bt.TerminateWithin(d)
	}
	return t.Terminate()
}
