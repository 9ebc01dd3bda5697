package frontier

import "testing"

// busyHosts, the load the balancer weighs, follows the hosts that have
// records: pending, ready, both, then none.
func TestOwnedGroupCountsBusyHosts(t *testing.T) {
	v := &ownedGroup{hosts: map[string]*hostBacklog{}, names: map[string]string{}, nameBytes: map[string]int64{}}
	check := func(step string, want int64) {
		t.Helper()
		if v.busyHosts != want {
			t.Fatalf("%s: busyHosts %d, want %d", step, v.busyHosts, want)
		}
	}
	v.addPending("a", Ref{}, 10)
	v.addPending("a", Ref{}, 10)
	check("a pending", 1)
	v.addReady("s000/u-1", "b", 5)
	check("b ready", 2)
	v.takePending(hostMove{host: "a", n: 2})
	check("a moved out", 1)
	v.addReady("s000/u-2", "a", 5)
	v.dropReady("s000/u-1")
	check("b done, a ready", 1)
	v.dropReady("s000/u-2")
	check("all done", 0)
}
