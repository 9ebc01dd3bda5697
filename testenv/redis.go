package testenv

// A real redis server (Debian's redis-server) for the digest index's tests
// (package dedup), started like ZooKeeper: its own loopback port and
// directory, no system service.

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisConfig configures StartRedis. The zero value is a valid test
// configuration.
type RedisConfig struct {
	// Dir holds redis.log (stdout and stderr) and the working directory
	// (nothing is persisted: no RDB snapshot, no append-only file).
	// Default: a new temporary directory, removed by Close.
	Dir string
	// MaxMemory is redis's maxmemory ("" or "0": no limit), e.g. "8mb",
	// with maxmemory-policy noeviction: writes past it are refused.
	MaxMemory string
	// Logger receives the process's lifecycle (default slog.Default()).
	Logger *slog.Logger
}

// Redis is a running redis-server (StartRedis).
type Redis struct {
	proc    *Proc
	port    int
	dir     string
	ownsDir bool
}

// redisBin finds redis-server in $PATH or /usr/bin (Debian's package).
func redisBin() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", fmt.Errorf("testenv: redis-server is not installed: run `make deps` (Debian package redis-server)")
}

// StartRedis runs redis-server in the foreground on a free 127.0.0.1 port
// with everything under cfg.Dir and no persistence, and returns once it
// answers PING (up to 20 s, and within ctx). When the port it picked is
// taken meanwhile it tries fresh ones (3 attempts). Errors: redis-server
// missing (the error says to run make deps), or no answer in time (with
// the tail of its log).
func StartRedis(ctx context.Context, cfg RedisConfig) (*Redis, error) {
	bin, err := redisBin()
	if err != nil {
		return nil, err
	}
	dir, owns := cfg.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "redis-"); err != nil {
			return nil, fmt.Errorf("testenv: redis dir: %w", err)
		}
		owns = true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: redis dir %s: %w", dir, err)
	}
	for attempt := 1; ; attempt++ {
		r, err := startRedisOnce(ctx, bin, dir, cfg)
		if err == nil {
			r.ownsDir = owns
			return r, nil
		}
		if attempt >= 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "in use") {
			if owns {
				_ = os.RemoveAll(dir)
			}
			return nil, err
		}
	}
}

func startRedisOnce(ctx context.Context, bin, dir string, cfg RedisConfig) (*Redis, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	maxmem := cfg.MaxMemory
	if maxmem == "" {
		maxmem = "0"
	}
	logPath := filepath.Join(dir, "redis.log")
	args := []string{"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--dir", dir,
		"--daemonize", "no", "--save", "", "--appendonly", "no", "--logfile", "",
		"--maxmemory", maxmem, "--maxmemory-policy", "noeviction"}
	p, err := StartProcess(context.WithoutCancel(ctx), ProcConfig{Path: bin, Args: args, LogFile: logPath, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	r := &Redis{proc: p, port: ports[0], dir: dir}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := redisPing(ctx, r.Addr()); err == nil {
			return r, nil
		}
		if p.Exited() || time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop(5 * time.Second)
			return nil, fmt.Errorf("testenv: redis-server on %s did not answer PING (exited: %v)\n%s", r.Addr(), p.Exited(), TailFile(logPath, 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisPing sends PING in RESP and wants +PONG.
func redisPing(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// RedisServer starts a redis-server for a test (StartRedis with cfg) and
// stops it when the test ends; on failure it calls t.Fatal, whose message
// says to run make deps when redis-server is missing. Each test gets its
// own server: it starts in milliseconds.
func RedisServer(t testing.TB, cfg RedisConfig) *Redis {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	r, err := StartRedis(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// Addr is "127.0.0.1:PORT".
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// URL is the server's redis URL for database db: "redis://127.0.0.1:PORT/db".
func (r *Redis) URL(db int) string { return fmt.Sprintf("redis://%s/%d", r.Addr(), db) }

// Stop stops the server (SIGTERM, SIGKILL after 5 s) and keeps its
// directory; a stopped server refuses connections.
func (r *Redis) Stop() { r.proc.Stop(5 * time.Second) }

// Close stops the server and removes its directory if StartRedis made it.
func (r *Redis) Close() {
	r.Stop()
	if r.ownsDir {
		_ = os.RemoveAll(r.dir)
	}
}
