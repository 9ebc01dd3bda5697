package testenv

import (
	"errors"
	"fmt"
	"net"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free at the
// time of the call. It listens on 127.0.0.1:0 n times, keeping every listener
// open until all n ports are known (so the kernel cannot hand out the same
// port twice), then closes them all. Pick all the ports a component needs in
// one call, e.g. the 3n client, peer and election ports of an n-node
// ZooKeeper ensemble.
//
// The ports are free only at the moment of the call: another process may take
// one before the caller binds it. StartZooKeeper and StartEnsemble retry with
// fresh ports when ZooKeeper reports "Address already in use".
//
// n must be at least 1; otherwise the error names n.
func FreePorts(n int) ([]int, error) {
	if n < 1 {
		return nil, fmt.Errorf("testenv: FreePorts: n=%d: need at least one port", n)
	}
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testenv: FreePorts: listen on 127.0.0.1:0: %w", err)
		}
		listeners = append(listeners, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("testenv: FreePorts: listener address is not TCP")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
