//go:build linux

package worker

import "syscall"

// fdLimit returns the process's RLIMIT_NOFILE soft limit, or 0 when it
// cannot be read (getrlimit(2)).
func fdLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return r.Cur
}

// totalRAM returns the machine's memory in bytes, or 0 when it cannot be
// read (sysinfo(2)). A cgroup memory limit is not looked at: set
// max_in_flight under one.
func totalRAM() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
