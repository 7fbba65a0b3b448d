package tracectx

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCopy(t *testing.T) {
	dst := map[string]any{"progressToken": "p"}
	Copy(dst, map[string]any{"traceparent": "00-a-b-01", "baggage": "k=v", "other": "x", "tracestate": 3})
	want := map[string]any{"progressToken": "p", "traceparent": "00-a-b-01", "baggage": "k=v"}
	if diff := cmp.Diff(want, dst); diff != "" {
		t.Errorf("Copy (-want +got):\n%s", diff)
	}
}
