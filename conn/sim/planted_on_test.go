//go:build simbugs

package sim_test

import "github.com/mcpfsm/mcpfsm/conn/internal/bugs"

// plantedBugs are the switches of conn/internal/bugs, by name; they exist
// in a build with the tag simbugs only.
var plantedBugs = []plantedBug{
	{"NoGenerationFence", &bugs.NoGenerationFence},
	{"SkipCloseBarrier", &bugs.SkipCloseBarrier},
	{"CallIgnoresDeadline", &bugs.CallIgnoresDeadline},
	{"PublishBeforeListed", &bugs.PublishBeforeListed},
}
