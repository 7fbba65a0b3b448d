package publish

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// closedNow reports whether c is closed.
func closedNow(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// item is a value of the test sets: published under name, registered by
// owner in its generation gen.
type item struct {
	name, owner string
	gen         int
}

// itemKeys names an item by name; an item held is the one registered when
// owner and generation agree, whatever else changed.
type itemKeys struct{}

func (itemKeys) Name(v item) string       { return v.name }
func (itemKeys) Same(held, old item) bool { return held.owner == old.owner && held.gen == old.gen }

type items = Set[item, itemKeys]
