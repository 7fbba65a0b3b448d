package bugs

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSwitchesAreOff: nothing but a test of the simulator turns a planted
// bug on, so every switch is off in every other test binary.
func TestSwitchesAreOff(t *testing.T) {
	for name, on := range map[string]bool{
		"BridgeForgetsSubject":   BridgeForgetsSubject,
		"InstancesWithoutClient": InstancesWithoutClient,
		"RootsLockReversed":      RootsLockReversed,
	} {
		if on {
			t.Errorf("bugs.%s is on by default", name)
		}
	}
}
