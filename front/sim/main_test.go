package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// The analysis goroutines of package bleve (through package front's tool
// search) live as long as the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
