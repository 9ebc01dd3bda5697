package main

// ZooKeeper and /proc readings: the zxid from the `srvr` four letter word
// (each write transaction, a multi counting once, increments it), `mntr`
// figures, the JVM's process id, CPU time and resident memory.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/zkcrawl/zkcrawl/testenv"
)

// srvrInfo is what the `srvr` four letter word reports (ZooKeeper
// Administrator's Guide, "The Four Letter Words").
type srvrInfo struct {
	Version string // "3.8.0-... built on ..."
	Zxid    int64  // last processed transaction id
	Nodes   int64  // znode count
}

// readSrvr sends `srvr` to addr and parses the version, zxid and node count.
// Errors: the exchange failed, or a field is missing or malformed.
func readSrvr(ctx context.Context, addr string) (srvrInfo, error) {
	out, err := testenv.FourLetterWord(ctx, addr, "srvr")
	if err != nil {
		return srvrInfo{}, err
	}
	var info srvrInfo
	var haveZxid bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Zookeeper version":
			info.Version = v
		case "Zxid":
			z, err := strconv.ParseInt(strings.TrimPrefix(v, "0x"), 16, 64)
			if err != nil {
				return info, fmt.Errorf("srvr from %s: Zxid %q: %w", addr, v, err)
			}
			info.Zxid, haveZxid = z, true
		case "Node count":
			info.Nodes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if !haveZxid {
		return info, fmt.Errorf("srvr from %s: no Zxid line in %q", addr, strings.TrimSpace(out))
	}
	return info, nil
}

// readMntr sends `mntr` and returns its key/value lines (tab separated),
// e.g. zk_approximate_data_size.
func readMntr(ctx context.Context, addr string) (map[string]string, error) {
	out, err := testenv.FourLetterWord(ctx, addr, "mntr")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("mntr from %s: no key/value lines in %q", addr, strings.TrimSpace(out))
	}
	return m, nil
}

// zkPid finds the JVM serving the ZooKeeper whose directory is dir: the
// process whose command line names dir/zoo.cfg. Errors: none found.
func zkPid(dir string) (int, error) {
	cfg := filepath.Join(dir, "zoo.cfg")
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	for _, p := range procs {
		args, err := p.CmdLine()
		if err != nil || len(args) == 0 {
			continue
		}
		if args[len(args)-1] == cfg {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("no process runs ZooKeeper with %s", cfg)
}

// procUsage is one reading of a process's CPU time and memory (proc(5)).
type procUsage struct {
	CPU    time.Duration // utime + stime
	RSSKB  int64         // VmRSS
	PeakKB int64         // VmHWM
}

// readProc reads a process's CPU time and memory from /proc/<pid>.
func readProc(pid int) (procUsage, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procUsage{}, fmt.Errorf("process %d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return procUsage{}, fmt.Errorf("process %d stat: %w", pid, err)
	}
	status, err := p.NewStatus()
	if err != nil {
		return procUsage{}, fmt.Errorf("process %d status: %w", pid, err)
	}
	return procUsage{
		CPU:    time.Duration(st.CPUTime() * float64(time.Second)),
		RSSKB:  int64(status.VmRSS / 1024), // procfs converts kB to bytes
		PeakKB: int64(status.VmHWM / 1024),
	}, nil
}

// selfCPU returns this process's CPU time so far (user plus system).
func selfCPU() time.Duration {
	u, err := readProc(os.Getpid())
	if err != nil {
		return 0
	}
	return u.CPU
}
