package metrics

// Exported for tests of the attribute-set cache.
const (
	MaxCachedSets   = maxCachedSets
	MaxCodesPerTool = maxCodesPerTool
)

// CachedSets is how many attribute sets m keeps for reuse.
func CachedSets(m *Metrics) int64 { return m.cached.Load() }

// Flush records the calls m has queued.
func Flush(m *Metrics) { m.pending.flush(false) }

// PendingCap is how many calls m queues before it records them.
const PendingCap = pendingCap
