package metrics

// Exported for tests of the attribute-set cache.
const (
	MaxCachedSets   = maxCachedSets
	MaxCodesPerTool = maxCodesPerTool
)

// CachedSets is how many attribute sets m keeps for reuse.
func CachedSets(m *Metrics) int64 { return m.cached.Load() }
