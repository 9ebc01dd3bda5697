//go:build !linux

package worker

// fdLimit and totalRAM are read on Linux only; elsewhere they are unknown
// (0) and the automatic request budget assumes defaultNofile
// descriptors and no memory bound: set max_in_flight there.
func fdLimit() uint64  { return 0 }
func totalRAM() uint64 { return 0 }
