package conn

import (
	"fmt"
	"sync"
)

// reserve claims server in claims for claim, with mu held: it fails with
// an error wrapping [ErrDuplicateServer] (naming what holds the claims)
// when server is taken. The returned release gives the name up only
// while claim still holds it, calling gone, with mu held, when it does.
// The registry and the catalog both keep their servers' names this way.
func reserve[V comparable](mu *sync.RWMutex, claims map[string]V, server string, claim V, what string, gone func(V)) (func(), error) {
	if _, ok := claims[server]; ok {
		return nil, fmt.Errorf("%w: %q is already supervised with this %s; give each server a distinct Name",
			ErrDuplicateServer, server, what)
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
