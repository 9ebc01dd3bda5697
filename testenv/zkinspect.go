package testenv

// Readings of a server beyond the four letter words (zkstats.go): its
// JVM's live heap and the files of its data directory.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// heapUsed matches a heap line of jcmd GC.heap_info: one per generation
// (Serial, Parallel) or one for the whole heap (G1), "total NK, used NK";
// the metaspace lines have no total.
var heapUsed = regexp.MustCompile(`total \d+K, used (\d+)K`)

// LiveHeapKB has the server's JVM collect its whole heap (jcmd <pid>
// GC.run: a System.gc(), a full stop-the-world collection with the Serial,
// Parallel and G1 collectors) and returns the heap then in use, KiB: the
// live data, the sum of what jcmd GC.heap_info lists as used. It blocks
// for the collection (seconds for a heap of GiB), bounded by ctx.
// Errors: the server is not running; jcmd is missing (a runtime without
// the JDK's tools) or fails; its output has no heap line. Each names the
// pid.
func (s *ZKServer) LiveHeapKB(ctx context.Context) (int64, error) {
	pid := s.Pid()
	if pid <= 0 {
		return 0, fmt.Errorf("testenv: LiveHeapKB: zookeeper %s is not running", s.Addr())
	}
	var out []byte
	for _, cmd := range []string{"GC.run", "GC.heap_info"} {
		var err error
		if out, err = exec.CommandContext(ctx, "jcmd", strconv.Itoa(pid), cmd).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("testenv: jcmd %d %s: %w: %s", pid, cmd, err, out)
		}
	}
	m := heapUsed.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("testenv: jcmd %d GC.heap_info: no heap line in %q", pid, out)
	}
	var kb int64
	for _, x := range m {
		n, _ := strconv.ParseInt(string(x[1]), 10, 64) // \d+: only overflow fails
		kb += n
	}
	return kb, nil
}

// DataFiles lists the server's data directory (Dir()/data/version-2):
// the size in bytes of each snapshot.* by name, and the log.* files'
// (transaction logs, preallocated) summed. Errors: the directory cannot
// be read.
func (s *ZKServer) DataFiles() (snapshots map[string]int64, logBytes int64, err error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "data", "version-2"))
	if err != nil {
		return nil, 0, fmt.Errorf("testenv: data files of %s: %w", s.Addr(), err)
	}
	snapshots = map[string]int64{}
	for _, e := range entries {
		info, err := e.Info()
		switch {
		case err != nil: // removed meanwhile (a purge)
		case strings.HasPrefix(e.Name(), "snapshot."):
			snapshots[e.Name()] = info.Size()
		case strings.HasPrefix(e.Name(), "log."):
			logBytes += info.Size()
		}
	}
	return snapshots, logBytes, nil
}
