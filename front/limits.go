package front

// ResultLimits bound the size of tool results.
type ResultLimits struct{}
