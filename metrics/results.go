package metrics

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// ResultCut counts one tool result of server cut to its limit, and the
// bytes cut, into mcpfsm.tool.result.cuts and
// mcpfsm.tool.result.cut_bytes (front.ResultLimits.OnCut). A nil Metrics
// counts nothing.
func (m *Metrics) ResultCut(server string, _, cut int) {
	if m == nil {
		return
	}
	opt := metric.WithAttributes(serverAttr(server))
	m.cuts.Add(context.Background(), 1, opt)
	m.cutBytes.Add(context.Background(), int64(cut), opt)
}
