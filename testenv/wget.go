package testenv

// GNU Wget as the yardstick of a crawl of a real site: a recursive mirror
// that also writes every response into a WARC file, as zkcrawl does.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Mirror is what WgetMirror did.
type Mirror struct {
	Elapsed   time.Duration   // wget's wall time
	WARCBytes int64           // its gzipped WARC file
	Pages     map[string]bool // URLs of the .html pages it saved (scheme://host/path, segments escaped)
}

// WgetMirror runs `wget -r -np -nv --warc-file` from start (a URL ending in
// a page, e.g. http://host:port/index.html) into dir/wget, writing every
// response to dir/wget.warc.gz and its log to dir/wget.log: one request at
// a time on one keep-alive connection. An HTTP error of some URL (wget's
// exit status 8: robots.txt is a 404) is no error; the pages it saved
// count. Errors: wget missing or failed to run, no WARC file written (a
// wget built without WARC support), or the mirror unreadable.
func WgetMirror(ctx context.Context, start, dir string) (Mirror, error) {
	var m Mirror
	u, err := url.Parse(start)
	if err != nil {
		return m, err
	}
	mirror := filepath.Join(dir, "wget")
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		return m, err
	}
	cmd := exec.CommandContext(ctx, "wget", "-r", "-np", "-nv", "--warc-file="+mirror, "-o", filepath.Join(dir, "wget.log"), start)
	cmd.Dir = mirror
	t0 := time.Now()
	err = cmd.Run()
	m.Elapsed = time.Since(t0)
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		return m, fmt.Errorf("testenv: wget: %w", err)
	}
	st, err := os.Stat(mirror + ".warc.gz")
	if err != nil {
		return m, fmt.Errorf("testenv: wget --warc-file wrote no %s.warc.gz (a wget built without WARC support?): %w", mirror, err)
	}
	m.WARCBytes = st.Size()
	hostDir := filepath.Join(mirror, u.Host)
	m.Pages = map[string]bool{}
	err = filepath.WalkDir(hostDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		rel, _ := filepath.Rel(hostDir, p)
		segs := strings.Split(filepath.ToSlash(rel), "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		m.Pages[u.Scheme+"://"+u.Host+"/"+strings.Join(segs, "/")] = true
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("testenv: wget mirror %s: %w", hostDir, err)
	}
	return m, nil
}
