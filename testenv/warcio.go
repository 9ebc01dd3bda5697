package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// WarcioVersion is the npm package warcio (webrecorder's warcio.js) that
// `make deps` installs into tools/warcio as an independent WARC reader.
const WarcioVersion = "2.4.11"

// ErrNoWarcio: the warcio command is not installed (run `make deps`).
var ErrNoWarcio = errors.New("testenv: warcio.js not installed: run `make deps` (npm install of warcio@" + WarcioVersion + " into tools/warcio)")

// WarcioPath returns the warcio.js command: $ZKCRAWL_WARCIO when set, else
// tools/warcio/node_modules/.bin/warcio under the module root, or
// ErrNoWarcio.
func WarcioPath() (string, error) {
	if p := os.Getenv("ZKCRAWL_WARCIO"); p != "" {
		return p, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", ErrNoWarcio
	}
	p := filepath.Join(filepath.Dir(file), "..", "tools", "warcio", "node_modules", ".bin", "warcio")
	if _, err := os.Stat(p); err != nil {
		return "", ErrNoWarcio
	}
	return p, nil
}

// CDXLine is the JSON part of one line of `warcio cdx-index --format cdxj
// --all` output: one per record (warcinfo and request records included;
// mime is "warc/revisit" for a revisit record).
type CDXLine struct {
	URL      string `json:"url"`
	MIME     string `json:"mime"`
	Status   string `json:"status"`
	Digest   string `json:"digest"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

// WarcioCDX runs warcio.js's cdx-index over one WARC file, an independent
// reader that parses every record and its HTTP headers, and returns its
// lines. It fails when warcio is missing (ErrNoWarcio), exits non-zero or
// prints anything to stderr (a record it could not parse).
func WarcioCDX(ctx context.Context, file string) ([]CDXLine, error) {
	cmd, err := WarcioPath()
	if err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, cmd, "cdx-index", "--format", "cdxj", "--all", file)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("warcio cdx-index %s: %w: %s", file, err, errb.String())
	}
	if s := strings.TrimSpace(errb.String()); s != "" {
		return nil, fmt.Errorf("warcio cdx-index %s: %s", file, s)
	}
	var lines []CDXLine
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		i := strings.Index(l, "{")
		if i < 0 {
			return nil, fmt.Errorf("warcio cdx-index %s: line without JSON: %q", file, l)
		}
		var cl CDXLine
		if err := json.Unmarshal([]byte(l[i:]), &cl); err != nil {
			return nil, fmt.Errorf("warcio cdx-index %s: %q: %w", file, l, err)
		}
		lines = append(lines, cl)
	}
	return lines, sc.Err()
}

// WarcioCDXJLines runs `warcio cdx-index FILE` (warcio.js's default CDXJ
// index: response, revisit, resource and metadata records, the pywb
// fields) and returns its lines sorted by byte order, the form of the
// .cdxj index the WARC writer puts beside each file. Errors as WarcioCDX.
func WarcioCDXJLines(ctx context.Context, file string) ([]string, error) {
	cmd, err := WarcioPath()
	if err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, cmd, "cdx-index", file)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("warcio cdx-index %s: %w: %s", file, err, errb.String())
	}
	if s := strings.TrimSpace(errb.String()); s != "" {
		return nil, fmt.Errorf("warcio cdx-index %s: %s", file, s)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if out.Len() == 0 {
		lines = nil
	}
	slices.Sort(lines)
	return lines, nil
}
