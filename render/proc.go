package render

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procTree returns pid and its descendants, read from /proc/*/stat (Linux);
// just pid where /proc cannot be read.
func procTree(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name (field 2) is in parentheses and may hold
		// spaces: the fields after the last ')' are state, ppid, ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// treeRSS returns the memory of pid's process tree in bytes: the sum of
// each process's proportional set size (Pss in /proc/PID/smaps_rollup:
// memory shared between the processes is split among them, so the sum is
// what the tree holds), or of its resident set size (/proc/PID/statm)
// where smaps_rollup cannot be read (then shared memory counts in each).
func treeRSS(pid int) int64 {
	var sum int64
	page := int64(os.Getpagesize())
	for _, p := range procTree(pid) {
		if n, ok := pss(p); ok {
			sum += n
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/statm")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			sum += n * page
		}
	}
	return sum
}

// killTree sends SIGKILL to pid's process tree, the children first read.
func killTree(pid int) {
	for _, p := range procTree(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// pss returns pid's proportional set size in bytes from
// /proc/PID/smaps_rollup ("Pss: N kB").
func pss(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10, true
				}
			}
		}
	}
	return 0, false
}
