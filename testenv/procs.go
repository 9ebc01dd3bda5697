package testenv

// Process tooling for tests and benchmarks that run real binaries: build a
// module's commands once per test binary, start them in their own process
// group with their output in a log file, signal, kill and wait for them,
// and read their resource use from /proc (proc(5)).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// ProcKillWait bounds how long Process's cleanup waits for a killed process
// to exit.
const ProcKillWait = 10 * time.Second

// ProcLogTailLines is how many log lines Process's cleanup prints for a
// failed test.
const ProcLogTailLines = 30

// ErrBuild is wrapped by BuildCommands errors caused by the go command
// (compile errors, missing packages); the error text carries its output.
var ErrBuild = errors.New("testenv: go build failed")

// buildCache remembers the binaries built by BuildCommands in this process:
// by name, the path of the first build (copied into other directories on
// demand) and, by absolute path, whether that exact file was produced here.
var buildCache = struct {
	mu     sync.Mutex
	byName map[string]string   // name -> absolute path of a built binary
	built  map[string]struct{} // absolute paths produced in this process
	root   string              // module root, once known
}{byName: map[string]string{}, built: map[string]struct{}{}}

// BuildCommands builds the commands ./cmd/<name> of the Go module that
// contains the current directory (found with `go env GOMOD`, so it works
// from any package directory under `go test`) into dir, one executable per
// name, and returns their absolute paths by name.
//
// Builds are cached for the life of the process (one test binary run): a
// name already built into dir is returned at once; a name built into another
// directory is copied from there; only the rest is built, all in one
// `go build -o dir/ ./cmd/<a> ./cmd/<b> ...` run from the module root. The
// binaries are normal builds: flags of the test binary (such as -race) do
// not apply, but GOFLAGS and the rest of the environment do.
//
// ctx bounds the build (the go command is killed when it ends). Errors: no
// names or a name that is not a plain directory name; not inside a module;
// ErrBuild with the go command's output.
func BuildCommands(ctx context.Context, dir string, names ...string) (map[string]string, error) {
	if len(names) == 0 {
		return nil, errors.New("testenv: BuildCommands: no command names given")
	}
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\`) {
			return nil, fmt.Errorf("testenv: BuildCommands: name %q: want a directory name under cmd/", n)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("testenv: BuildCommands: dir %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: BuildCommands: dir %q: %w", dir, err)
	}

	buildCache.mu.Lock()
	defer buildCache.mu.Unlock()
	out := make(map[string]string, len(names))
	var missing []string
	for _, n := range names {
		target := filepath.Join(abs, n)
		if _, ok := buildCache.built[target]; ok && fileExists(target) {
			out[n] = target
			continue
		}
		if src, ok := buildCache.byName[n]; ok && fileExists(src) {
			if err := copyExecutable(src, target); err != nil {
				return nil, fmt.Errorf("testenv: BuildCommands: copy %s to %s: %w", src, target, err)
			}
			buildCache.built[target] = struct{}{}
			out[n] = target
			continue
		}
		missing = append(missing, n)
	}
	if len(missing) == 0 {
		return out, nil
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"build", "-o", abs + string(filepath.Separator)}
	for _, n := range missing {
		args = append(args, "./cmd/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: go %s (in %s): %w\n%s", ErrBuild, strings.Join(args, " "), root, err, b)
	}
	for _, n := range missing {
		target := filepath.Join(abs, n)
		if !fileExists(target) {
			return nil, fmt.Errorf("%w: go build produced no %s (is ./cmd/%s a main package?)", ErrBuild, target, n)
		}
		buildCache.built[target] = struct{}{}
		buildCache.byName[n] = target
		out[n] = target
	}
	return out, nil
}

// moduleRoot returns the directory of the main module's go.mod. Caller
// holds buildCache.mu.
func moduleRoot(ctx context.Context) (string, error) {
	if buildCache.root != "" {
		return buildCache.root, nil
	}
	b, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("testenv: BuildCommands: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("testenv: BuildCommands: the current directory is not inside a Go module (go env GOMOD is empty)")
	}
	buildCache.root = filepath.Dir(gomod)
	return buildCache.root, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// copyExecutable hard-links src to dst, or copies it when linking fails
// (another file system); an existing dst is replaced.
func copyExecutable(src, dst string) error {
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// ProcConfig describes a process for StartProcess.
type ProcConfig struct {
	// Path is the executable (required): a path, or a name looked up in
	// $PATH.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env holds extra "KEY=value" entries added to the current process's
	// environment; a key given here overrides the inherited value.
	Env []string
	// Dir is the working directory; "" means the current one.
	Dir string
	// LogFile receives the process's stdout and stderr, appended (created
	// if missing, with its directory). "" discards the output.
	LogFile string
	// Logger receives lifecycle events at Debug (start, exit) and unexpected
	// trouble at Warn; nil means slog.Default().
	Logger *slog.Logger
}

// Proc is a running (or exited) child process started by StartProcess, the
// leader of its own process group. Methods are safe for concurrent use.
type Proc struct {
	cfg  ProcConfig
	cmd  *exec.Cmd
	pid  int
	log  *slog.Logger
	done chan struct{} // closed once the process has exited and was reaped

	mu    sync.Mutex
	state *os.ProcessState // set when done
	// last readings from /proc, kept for when /proc/<pid> is gone.
	lastRSSKB int64
	lastCPU   time.Duration
}

// StartProcess starts cfg.Path with cfg.Args in a new process group (so a
// signal from Signal or Kill reaches its children too), with stdin from
// /dev/null and stdout and stderr appended to cfg.LogFile. The child gets
// SIGKILL if the calling process dies (Linux parent-death signal), and its
// whole process group gets SIGKILL when ctx ends: pass a context that lives
// as long as the process should. It does not wait for the process to be
// ready; that is the caller's protocol.
//
// Errors: an empty Path, a log file that cannot be opened, or the start
// failure (e.g. exec: not found), naming the program.
func StartProcess(ctx context.Context, cfg ProcConfig) (*Proc, error) {
	if cfg.Path == "" {
		return nil, errors.New("testenv: StartProcess: ProcConfig.Path is empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("testenv: StartProcess %s: %w", cfg.Path, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var out io.Writer = io.Discard
	if cfg.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("testenv: StartProcess %s: log file %s: %w", cfg.Path, cfg.LogFile, err)
		}
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("testenv: StartProcess %s: log file: %w", cfg.Path, err)
		}
		defer f.Close() // the child has its own descriptor
		fmt.Fprintf(f, "=== testenv %s: %s %s\n", time.Now().Format(time.RFC3339Nano), cfg.Path, strings.Join(cfg.Args, " "))
		out = f
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	if len(cfg.Env) > 0 {
		// os/exec keeps the last value of a duplicated key.
		cmd.Env = append(os.Environ(), cfg.Env...)
	}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own process group: Signal and Kill reach its children
		Pdeathsig: syscall.SIGKILL, // nothing survives a crashed test binary
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: StartProcess %s: %w", cfg.Path, err)
	}
	p := &Proc{
		cfg:  cfg,
		cmd:  cmd,
		pid:  cmd.Process.Pid,
		done: make(chan struct{}),
	}
	p.log = cfg.Logger.With("pid", p.pid, "program", filepath.Base(cfg.Path))
	p.log.Debug("process started", "args", cfg.Args, "log", cfg.LogFile)
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(p.done)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.log.Warn("waiting for the process failed", "err", err)
		}
		p.log.Debug("process exited", "state", cmd.ProcessState.String())
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Kill()
		case <-p.done:
		}
	}()
	return p, nil
}

// Process is StartProcess for a test or benchmark: the process lives until
// the test ends (t.Context()), it calls t.Fatal on a start error, and its
// cleanup kills the process group (SIGKILL), waits up to ProcKillWait for
// the exit and, when the test failed, logs the last ProcLogTailLines lines
// of cfg.LogFile.
func Process(t testing.TB, cfg ProcConfig) *Proc {
	t.Helper()
	p, err := StartProcess(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), ProcKillWait)
		defer cancel()
		if _, err := p.Wait(ctx); err != nil {
			t.Errorf("testenv: process %d (%s) did not exit after SIGKILL: %v", p.pid, cfg.Path, err)
		}
		if t.Failed() && cfg.LogFile != "" {
			t.Logf("--- last %d lines of %s (pid %d) ---\n%s", ProcLogTailLines, cfg.LogFile, p.pid, p.LogTail(ProcLogTailLines))
		}
	})
	return p
}

// Pid returns the process id (also its process group id).
func (p *Proc) Pid() int { return p.pid }

// Config returns the configuration the process was started with.
func (p *Proc) Config() ProcConfig { return p.cfg }

// Done returns a channel closed once the process has exited (and was
// reaped).
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process's group: the process and every child
// that stayed in its group, as a terminal's Ctrl-C does. It returns
// os.ErrProcessDone when the process has already exited, or the kill(2)
// error.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return os.ErrProcessDone
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("testenv: signal %v to process group %d: %w", sig, p.pid, err)
	}
	return nil
}

// Kill sends SIGKILL to the process's group (a crash: no clean shutdown)
// and returns without waiting; use Wait or Done for the exit. Children that
// stayed in the group die too, even when the leader has already exited.
// Killing an exited, empty group returns nil.
func (p *Proc) Kill() error {
	if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("testenv: SIGKILL to process group %d: %w", p.pid, err)
	}
	return nil
}

// Stop asks the process to exit, as a service manager does: SIGTERM to its
// group, then SIGKILL when it still runs after grace. It returns once the
// process has exited, with its exit code (-1 when a signal ended it); an
// exited process's code at once.
func (p *Proc) Stop(grace time.Duration) int {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Kill()
		<-p.done
	}
	return p.ProcessState().ExitCode()
}

// Wait blocks until the process exits or ctx ends and returns its exit
// code: 0..255 for a normal exit, -1 when a signal ended it (see
// ProcessState). Errors: ctx.Err() when ctx ends first.
func (p *Proc) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.ProcessState().ExitCode(), nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// ProcessState returns the exit state (exit code, signal, rusage), or nil
// while the process runs.
func (p *Proc) ProcessState() *os.ProcessState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// RSSPeakKB returns the peak resident set size in KiB: VmHWM from
// /proc/<pid>/status while the process runs (proc(5)), and ru_maxrss of its
// rusage after it exited (getrusage(2): KiB on Linux). Errors: /proc cannot
// be read and the process has not exited (e.g. it is a zombie between exit
// and reaping; retry after Done).
func (p *Proc) RSSPeakKB() (int64, error) {
	if st := p.ProcessState(); st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			return max(ru.Maxrss, p.lastRSS()), nil
		}
		return p.lastRSS(), nil
	}
	u, err := readProcUsage(p.pid)
	if err == nil && u.PeakKB > 0 {
		p.mu.Lock()
		p.lastRSSKB = max(p.lastRSSKB, u.PeakKB)
		p.mu.Unlock()
		return u.PeakKB, nil
	}
	if err == nil {
		err = errors.New("no VmHWM (zombie?)")
	}
	if st := p.ProcessState(); st != nil { // exited meanwhile
		return p.RSSPeakKB()
	}
	return 0, fmt.Errorf("testenv: peak RSS of process %d: %w", p.pid, err)
}

func (p *Proc) lastRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRSSKB
}

// CPUTime returns the CPU time the process has used, user plus system:
// utime+stime from /proc/<pid>/stat while it runs (proc(5); clock ticks of
// USER_HZ = 100 per second, which Linux fixes for /proc on every
// architecture, so no cgo sysconf is needed), and the rusage user plus
// system time after it exited. Children's time is not included. Errors:
// /proc cannot be read and the process has not exited.
func (p *Proc) CPUTime() (time.Duration, error) {
	if st := p.ProcessState(); st != nil {
		return max(st.UserTime()+st.SystemTime(), p.lastCPUTime()), nil
	}
	u, err := readProcUsage(p.pid)
	if err == nil {
		p.mu.Lock()
		p.lastCPU = max(p.lastCPU, u.CPU)
		p.mu.Unlock()
		return u.CPU, nil
	}
	if st := p.ProcessState(); st != nil {
		return p.CPUTime()
	}
	return 0, fmt.Errorf("testenv: CPU time of process %d: %w", p.pid, err)
}

func (p *Proc) lastCPUTime() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastCPU
}

// ProcUsage is one reading of a process's CPU time and memory from /proc
// (proc(5)).
type ProcUsage struct {
	// CPU is utime+stime: clock ticks of USER_HZ = 100 per second, which
	// Linux fixes for /proc on every architecture, so no cgo sysconf is
	// needed. Children's time is not included.
	CPU    time.Duration
	RSSKB  int64 // VmRSS, KiB
	PeakKB int64 // VmHWM, KiB (0 for a zombie)
}

// ReadProcUsage reads the CPU time and memory of any process (not only one
// StartProcess started, e.g. a ZooKeeper JVM: ZKServer.Pid) from
// /proc/<pid>/stat and /proc/<pid>/status. Errors: /proc/<pid> cannot be
// read (no such process), naming the pid.
func ReadProcUsage(pid int) (ProcUsage, error) {
	u, err := readProcUsage(pid)
	if err != nil {
		return u, fmt.Errorf("testenv: process %d: %w", pid, err)
	}
	return u, nil
}

func readProcUsage(pid int) (ProcUsage, error) {
	fs, err := procfs.NewProc(pid)
	if err != nil {
		return ProcUsage{}, err
	}
	stat, err := fs.Stat()
	if err != nil {
		return ProcUsage{}, err
	}
	status, err := fs.NewStatus()
	if err != nil {
		return ProcUsage{}, err
	}
	return ProcUsage{
		CPU:    time.Duration(stat.CPUTime() * float64(time.Second)),
		RSSKB:  int64(status.VmRSS / 1024), // procfs converts the kB fields to bytes
		PeakKB: int64(status.VmHWM / 1024),
	}, nil
}

// LogTail returns the last n lines of the process's log file (at most its
// last 256 KiB), or "" when there is none.
func (p *Proc) LogTail(n int) string {
	return TailFile(p.cfg.LogFile, n)
}

// TailFile returns the last n lines of the file at path, reading at most its
// last 256 KiB; "" when path is empty or unreadable.
func TailFile(path string, n int) string {
	if path == "" || n <= 0 {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxTail {
		if _, err := f.Seek(st.Size()-maxTail, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxTail)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
