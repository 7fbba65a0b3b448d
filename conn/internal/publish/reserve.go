package publish

import (
	"fmt"
	"sync"
)

// reservation is one Reserve's claim on a server name; its pointer tells
// a stale release from the current one (so it must not be zero-sized).
type reservation struct{ server string }

// reserve claims server in claims for claim, with mu held: it fails with
// an error wrapping [ErrReserved] when server is taken. The returned
// release gives the name up only while claim still holds it, calling
// gone, with mu held, when it does. A [Set] and a [Shelf] both keep their
// servers' names this way.
func reserve[C comparable](mu *sync.RWMutex, claims map[string]C, server string, claim C, gone func(C)) (func(), error) {
	if _, ok := claims[server]; ok {
		return nil, fmt.Errorf("%w: %q", ErrReserved, server)
	}
	claims[server] = claim
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if claims[server] == claim {
			delete(claims, server)
			if gone != nil {
				gone(claim)
			}
		}
	}, nil
}
