package testenv

// A real web server for benchmarks against a real site: nginx serving a
// directory on loopback, and an HTTP proxy that delays every response as a
// server a few milliseconds away would.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// NginxConfig configures StartNginx.
type NginxConfig struct {
	Root    string       // the directory served at /; it must hold index.html
	Dir     string       // config, pid file, logs and temp files; created
	Workers int          // nginx worker_processes (default 2)
	Logger  *slog.Logger // process lifecycle (default slog.Default())
}

// Nginx is a running nginx (StartNginx).
type Nginx struct {
	URL     string // "http://127.0.0.1:PORT/"
	Version string // as `nginx -v` prints it, less "nginx version: ": "nginx/1.22.1"
	proc    *Proc
}

// StartNginx runs nginx in the foreground (`daemon off`, from $PATH or
// /usr/sbin) serving cfg.Root on a free loopback port, with sendfile on,
// keep-alive, no access log and everything it writes under cfg.Dir, and
// returns once index.html answers 200 (up to 20 s). It makes cfg.Dir and
// its parents reachable to nginx's workers, which may run as another user.
// Errors: nginx missing (or its -v failing), the config not written, or no 200 in time (with
// the tail of nginx's error log).
func StartNginx(ctx context.Context, cfg NginxConfig) (*Nginx, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	version, err := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("testenv: %s -v: %w (install nginx)", bin, err)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	for d := cfg.Dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o005 != 0o005 {
			_ = os.Chmod(d, st.Mode().Perm()|0o055)
		}
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	temps := ""
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		temps += fmt.Sprintf("    %s_temp_path %s/%s;\n", t, cfg.Dir, t)
	}
	conf := fmt.Sprintf(`# nginx of testenv.StartNginx: foreground, everything under %[2]s.
daemon off;
worker_processes %[1]d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
%[5]s    sendfile on;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:%[3]d;
        server_name localhost;
        root %[4]s;
    }
}
`, cfg.Workers, cfg.Dir, ports[0], cfg.Root, temps)
	confPath, errLog := filepath.Join(cfg.Dir, "nginx.conf"), filepath.Join(cfg.Dir, "error.log")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p, err := StartProcess(ctx, ProcConfig{Path: bin, Args: []string{"-p", cfg.Dir, "-e", errLog, "-c", confPath},
		LogFile: filepath.Join(cfg.Dir, "nginx.out"), Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	n := &Nginx{URL: fmt.Sprintf("http://127.0.0.1:%d/", ports[0]), proc: p,
		Version: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(version)), "nginx version:"))}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.URL+"index.html", nil)
		if err != nil {
			n.Close()
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n, nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			n.Close()
			return nil, fmt.Errorf("testenv: nginx: %sindex.html did not answer 200 within 20s: %w\n%s", n.URL, err, TailFile(errLog, 10))
		}
	}
}

// Close stops nginx (SIGTERM, SIGKILL after 10 s).
func (n *Nginx) Close() { n.proc.Stop(10 * time.Second) }

// DelayProxy serves, on a free loopback port, a reverse proxy to origin
// that holds every response back for d, as a server d away would; it
// returns its base URL and a stop function. Errors: origin does not parse,
// or no port.
func DelayProxy(origin string, d time.Duration) (string, func(), error) {
	target, err := url.Parse(origin)
	if err != nil {
		return "", nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
			rp.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}
