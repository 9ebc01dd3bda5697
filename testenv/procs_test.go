package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBuildCommandsCachesAndCopies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir1, dir2 := t.TempDir(), t.TempDir()
	bins, err := BuildCommands(ctx, dir1, "testweb")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir1, "testweb")
	if bins["testweb"] != want || !fileExists(want) {
		t.Fatalf("BuildCommands = %v, want %s to exist", bins, want)
	}
	st1, _ := os.Stat(want)
	again, err := BuildCommands(ctx, dir1, "testweb")
	if err != nil || again["testweb"] != want {
		t.Fatalf("second BuildCommands = %v, %v", again, err)
	}
	if st2, _ := os.Stat(want); !st2.ModTime().Equal(st1.ModTime()) {
		t.Errorf("the cached binary was rebuilt")
	}
	other, err := BuildCommands(ctx, dir2, "testweb")
	if err != nil || other["testweb"] != filepath.Join(dir2, "testweb") || !fileExists(other["testweb"]) {
		t.Fatalf("BuildCommands into a second dir = %v, %v", other, err)
	}
	p := Process(t, ProcConfig{Path: other["testweb"], Args: []string{"--help"}, LogFile: filepath.Join(t.TempDir(), "help.log")})
	if code, err := p.Wait(ctx); err != nil || code != 0 {
		t.Fatalf("testweb --help: exit %d, %v\n%s", code, err, p.LogTail(20))
	}
	if !strings.Contains(p.LogTail(100), "testweb") {
		t.Errorf("log lacks the help text:\n%s", p.LogTail(20))
	}
}

func TestBuildCommandsRejectsBadNames(t *testing.T) {
	for _, names := range [][]string{nil, {""}, {"../x"}, {"a/b"}} {
		if _, err := BuildCommands(context.Background(), t.TempDir(), names...); err == nil {
			t.Errorf("BuildCommands(%q) succeeded", names)
		}
	}
	_, err := BuildCommands(context.Background(), t.TempDir(), "no-such-command")
	if !errors.Is(err, ErrBuild) {
		t.Errorf("BuildCommands(no-such-command) = %v, want ErrBuild", err)
	}
}

func TestProcessSignalExitCodeAndEnv(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sh.log")
	p := Process(t, ProcConfig{
		Path:    "/bin/sh",
		Args:    []string{"-c", `echo "value=$TESTENV_X"; trap 'echo "bye-$TESTENV_X"; exit 3' TERM; while :; do sleep 0.05; done`},
		Env:     []string{"TESTENV_X=42"},
		LogFile: log,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitFor(ctx, t, func() bool { return strings.Contains(p.LogTail(10), "value=42") })
	if p.Exited() {
		t.Fatal("exited early")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(ctx)
	if err != nil || code != 3 {
		t.Fatalf("exit %d, %v; want 3\n%s", code, err, p.LogTail(10))
	}
	if !strings.Contains(p.LogTail(10), "bye-42") {
		t.Errorf("trap did not run:\n%s", p.LogTail(10))
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after exit = %v, want os.ErrProcessDone", err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill after exit = %v", err)
	}
}

func TestProcessStopEscalatesToKill(t *testing.T) {
	polite := Process(t, ProcConfig{Path: "/bin/sh", Args: []string{"-c", `trap 'exit 3' TERM; while :; do sleep 0.05; done`}})
	stubborn := Process(t, ProcConfig{Path: "/bin/sh", Args: []string{"-c", `trap '' TERM; while :; do sleep 0.05; done`}})
	time.Sleep(200 * time.Millisecond) // let the shells set their traps
	if code := polite.Stop(10 * time.Second); code != 3 {
		t.Errorf("Stop of a process exiting on SIGTERM = %d, want its exit code 3", code)
	}
	t0 := time.Now()
	if code := stubborn.Stop(300 * time.Millisecond); code != -1 || time.Since(t0) < 300*time.Millisecond {
		t.Errorf("Stop of a process ignoring SIGTERM = %d after %v, want -1 (SIGKILL) after the grace", code, time.Since(t0))
	}
	if code := stubborn.Stop(time.Hour); code != -1 {
		t.Errorf("Stop of an exited process = %d, want its code -1 at once", code)
	}
}

func TestProcessKillTakesTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	p := Process(t, ProcConfig{
		Path: "/bin/sh", Dir: dir,
		Args: []string{"-c", `sleep 60 & echo $! > child.pid.tmp; mv child.pid.tmp child.pid; wait`},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitFor(ctx, t, func() bool { _, err := os.Stat(pidFile); return err == nil })
	b, _ := os.ReadFile(pidFile)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(ctx); err != nil || code != -1 {
		t.Fatalf("Wait after Kill = %d, %v; want -1 (signalled)", code, err)
	}
	if ws, ok := p.ProcessState().Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("exit state %v, want killed by SIGKILL", p.ProcessState())
	}
	// The orphaned child got the SIGKILL too: gone, or a zombie nobody
	// reaped yet (a container's PID 1 may not reap).
	waitFor(ctx, t, func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil {
			return true
		}
		i := strings.LastIndexByte(string(stat), ')')
		return i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
	})
}

func TestProcessResourceReadings(t *testing.T) {
	p := Process(t, ProcConfig{
		Path: "/bin/sh",
		// Burn a little CPU, then idle until killed.
		Args:    []string{"-c", `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo "counted to $i"; exec sleep 60`},
		LogFile: filepath.Join(t.TempDir(), "busy.log"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitFor(ctx, t, func() bool { return strings.Contains(p.LogTail(5), "counted to 100000") })
	cpu, err := p.CPUTime()
	if err != nil || cpu <= 0 {
		t.Fatalf("CPUTime while running = %v, %v; want > 0", cpu, err)
	}
	rss, err := p.RSSPeakKB()
	if err != nil || rss <= 0 {
		t.Fatalf("RSSPeakKB while running = %v, %v; want > 0", rss, err)
	}
	_ = p.Kill()
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if after, err := p.CPUTime(); err != nil || after < cpu {
		t.Errorf("CPUTime after exit = %v, %v; want >= %v", after, err, cpu)
	}
	if after, err := p.RSSPeakKB(); err != nil || after <= 0 {
		t.Errorf("RSSPeakKB after exit = %v, %v; want > 0", after, err)
	}
}

func TestReadProcUsageOfAnyProcess(t *testing.T) {
	u, err := ReadProcUsage(os.Getpid())
	if err != nil || u.RSSKB <= 0 || u.PeakKB < u.RSSKB || u.CPU < 0 {
		t.Fatalf("ReadProcUsage(self) = %+v, %v; want RSS > 0 and peak >= RSS", u, err)
	}
	if _, err := ReadProcUsage(1 << 30); err == nil || !strings.Contains(err.Error(), strconv.Itoa(1<<30)) {
		t.Errorf("ReadProcUsage of no process: err = %v, want one naming the pid", err)
	}
}

func TestStartProcessErrorsAndContext(t *testing.T) {
	if _, err := StartProcess(context.Background(), ProcConfig{}); err == nil {
		t.Error("empty Path accepted")
	}
	if _, err := StartProcess(context.Background(), ProcConfig{Path: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Error("missing program started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := StartProcess(ctx, ProcConfig{Path: "/bin/sleep", Args: []string{"60"}})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if code, err := p.Wait(wctx); err != nil || code != -1 {
		t.Fatalf("after ctx cancel: exit %d, %v; want killed", code, err)
	}
}

// waitFor polls cond every 20 ms until it holds or ctx ends (then t.Fatal).
func waitFor(ctx context.Context, t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met in time")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
