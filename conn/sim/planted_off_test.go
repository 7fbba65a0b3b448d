//go:build !simbugs

package sim_test

// plantedBugs is empty without the tag simbugs: the switches of
// conn/internal/bugs are constants, and -planted and -bug need
// go test -tags simbugs.
var plantedBugs []plantedBug
