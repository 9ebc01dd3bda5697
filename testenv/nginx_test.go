package testenv

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartNginxAndDelayProxy: nginx serves the directory, and the proxy
// in front of it answers the same page no sooner than its delay. Skipped
// without nginx (scripts/bench.sh installs it).
func TestStartNginxAndDelayProxy(t *testing.T) {
	if _, err := exec.LookPath("nginx"); err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed")
		}
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("<p>hello</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := StartNginx(ctx, NginxConfig{Root: root, Dir: filepath.Join(t.TempDir(), "nginx")})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !strings.HasPrefix(n.Version, "nginx/") {
		t.Errorf("Version = %q, want nginx/<version>", n.Version)
	}
	proxy, stop, err := DelayProxy(n.URL, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	t0 := time.Now()
	resp, err := http.Get(proxy + "index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "<p>hello</p>" || time.Since(t0) < 50*time.Millisecond {
		t.Fatalf("through the proxy: %q after %v; want the page after 50ms", body, time.Since(t0))
	}
}

// TestDelayProxyHoldsResponsesBack: the page through the proxy is the
// origin's, answered no sooner than the delay.
func TestDelayProxyHoldsResponsesBack(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page "+r.URL.Path) }))
	defer origin.Close()
	proxy, stop, err := DelayProxy(origin.URL+"/", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	t0 := time.Now()
	resp, err := http.Get(proxy + "x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "page /x" || time.Since(t0) < 50*time.Millisecond {
		t.Fatalf("through the proxy: %q after %v; want %q after 50ms", body, time.Since(t0), "page /x")
	}
}
