//go:build !simbugs

package sim

// plantedBugs is empty without the tag simbugs: the switches are
// constants.
var plantedBugs []plantedBug
