// Package bugs holds switches that plant known bugs in package front, so
// that the gateway's simulator (package front/sim) can show that it finds
// each of them. The switches are variables only in a build with the tag
// simbugs (go test -tags simbugs ./front/sim -planted, as CI runs it),
// where a test of the simulator sets one between runs, when no front is
// running. In every other build they are constants, false. Packages front
// and front/internal/bridge read them only in their planted.go, which is
// built with the tag alone; without it, the seams of planted_off.go do
// what the gateway does, so the planted bugs are not in the library and
// no file of it reads a switch (internal/planted's test checks this).
//
// Nothing else may set them: a switch that is on breaks a promise of
// package front on purpose.
package bugs

import "sync"

// calls is every bridged call of every client, by requestState: the
// lookup of BridgeForgetsSubject.
var calls sync.Map

// KeepCall records call under state for BridgeForgetsSubject.
func KeepCall(state string, call any) { calls.Store(state, call) }

// AnyCall returns the call of any client that KeepCall recorded under
// state: the lookup that forgets whose the call is.
func AnyCall(state string) (any, bool) { return calls.Load(state) }

// instances is the instance of each front's server, whoever its client:
// the table of InstancesWithoutClient.
var (
	imu       sync.Mutex
	instances = map[[2]any]any{}
)

// SharedInstance returns the instance kept for (owner, server), making it
// with mk the first time: a table of instances keyed without the client.
func SharedInstance(owner any, server string, mk func() (any, error)) (any, error) {
	imu.Lock()
	defer imu.Unlock()
	key := [2]any{owner, server}
	if in, ok := instances[key]; ok {
		return in, nil
	}
	in, err := mk()
	if err == nil {
		instances[key] = in
	}
	return in, err
}

// ForgetInstances drops the instances SharedInstance kept for owner.
func ForgetInstances(owner any) {
	imu.Lock()
	defer imu.Unlock()
	for k := range instances {
		if k[0] == owner {
			delete(instances, k)
		}
	}
}
