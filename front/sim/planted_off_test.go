//go:build !simbugs

package sim_test

// plantedBugs is empty without the tag simbugs: the switches are
// constants.
var plantedBugs []plantedBug
