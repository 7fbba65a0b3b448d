package toolsearch

import (
	"testing"

	"go.uber.org/goleak"
)

// The analysis goroutines of package bleve live as long as the process:
// it starts them at init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
