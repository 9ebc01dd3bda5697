package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkcrawl/zkcrawl/config"
)

func mustRules(t *testing.T, accept, reject []string, caps []config.BodyRule) ContentRules {
	t.Helper()
	r, err := NewContentRules(accept, reject, caps)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestContentRulesJudgeTheMediaType(t *testing.T) {
	r := mustRules(t, []string{"text/html", "IMAGE/*"}, []string{"image/svg+xml"}, nil)
	for mt, rejected := range map[string]bool{
		"text/html": false, "TEXT/HTML": false, "image/png": false,
		"image/svg+xml": true, // reject wins over accept
		"video/mp4":     true, OctetStream: true, "text/plain": true,
	} {
		if got, why := r.Rejects(mt); got != rejected {
			t.Errorf("Rejects(%q) = %v (%q), want %v", mt, got, why, rejected)
		}
	}
	if no, _ := (ContentRules{}).Rejects("video/mp4"); no {
		t.Error("no rules rejected video/mp4")
	}
	all := mustRules(t, nil, []string{"*/*"}, nil)
	if no, why := all.Rejects("text/html"); !no || why != "matches reject_mime */*" {
		t.Errorf("*/* rejects text/html: %v %q", no, why)
	}
	caps := mustRules(t, nil, nil, []config.BodyRule{{MIME: "video/*", MaxBytes: 2048}, {MIME: "*/*", MaxBytes: 4096}})
	if got := caps.MaxBody("video/mp4", 1<<20); got != 2048 {
		t.Errorf("MaxBody(video/mp4) = %d, want the first rule's 2048", got)
	}
	if got := caps.MaxBody("text/html", 1<<20); got != 4096 {
		t.Errorf("MaxBody(text/html) = %d, want 4096", got)
	}
	if got := (ContentRules{}).MaxBody("text/html", 1<<20); got != 1<<20 {
		t.Errorf("MaxBody without rules = %d, want the default", got)
	}
	if got := caps.maxCap(1024); got != 4096 {
		t.Errorf("maxCap = %d, want 4096", got)
	}
}

// bigVideo serves size bytes of video/mp4 (Content-Length set) in 64 KiB
// writes and reports on sent how many bytes were written before the
// connection failed (or all of them).
func bigVideo(size int64, sent chan<- int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		chunk := make([]byte, 64<<10)
		var n int64
		for n < size {
			m, err := w.Write(chunk[:min(int64(len(chunk)), size-n)])
			n += int64(m)
			if err != nil {
				break
			}
		}
		sent <- n
	}
}

// A rejected media type is not read past the header: the connection is
// closed and the server's writes fail long before the body is sent.
func TestFetchContentStopsARejectedBody(t *testing.T) {
	const size = 512 << 20
	sent := make(chan int64, 4)
	srv := httptest.NewServer(bigVideo(size, sent))
	defer srv.Close()
	o := loopbackOpts()
	o.MaxBodyBytes = 1 << 30 // the cap is not what stops it
	o.Content = mustRules(t, nil, []string{"video/*"}, nil)
	f := newFetcher(t, o)

	start := time.Now()
	res, err := f.FetchContent(context.Background(), srv.URL+"/big.mp4", Conditions{})
	var fe *Error
	var rej *RejectedError
	if res != nil || !errors.As(err, &fe) || fe.Code != CodeMIMERejected || !errors.As(err, &rej) || !errors.Is(err, ErrMIMERejected) {
		t.Fatalf("FetchContent = %v, %v; want a CodeMIMERejected *Error", res, err)
	}
	if rej.Status != 200 || rej.MIME != "video/mp4" || rej.Why != "matches reject_mime video/*" {
		t.Errorf("RejectedError = %+v", rej)
	}
	if got := Reason(err); got != "mime-rejected (-5002): HTTP 200 video/mp4 matches reject_mime video/*: body not read" {
		t.Errorf("Reason = %q", got)
	}
	select {
	case n := <-sent:
		if n >= size/16 {
			t.Errorf("server sent %d of %d bytes: the connection was not closed early", n, size)
		}
		t.Logf("server sent %d of %d bytes before the connection closed (%v)", n, size, time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the server kept sending: connection not closed")
	}

	// FetchIf (a requisite) reads it whatever its type, up to the cap.
	o.MaxBodyBytes = 1 << 20
	f.SetOptions(o)
	res, err = f.FetchIf(context.Background(), srv.URL+"/big.mp4", Conditions{})
	if err != nil || !res.Truncated || len(res.Body) != 1<<20 {
		t.Fatalf("FetchIf: %v; want the body cut at 1 MiB", err)
	}
	<-sent
}

// Only a 2xx response is judged; a missing Content-Type counts as
// application/octet-stream; accept_mime lets through only its types.
func TestFetchContentJudgesOnly2xx(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/page", http.StatusFound)
		case "/page":
			w.Header().Set("Content-Type", "Text/HTML; charset=utf-8")
			w.Write([]byte("<p>hi</p>"))
		case "/none":
			w.Header()["Content-Type"] = nil // no sniffing by net/http
			w.Write([]byte("<html>untyped</html>"))
		case "/gone":
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	o := loopbackOpts()
	o.Content = mustRules(t, []string{"text/html"}, nil, nil)
	f := newFetcher(t, o)
	ctx := context.Background()
	for path, want := range map[string]int{"/moved": 302, "/page": 200, "/gone": 404} {
		res, err := f.FetchContent(ctx, srv.URL+path, Conditions{})
		if err != nil || res.Status != want {
			t.Errorf("%s: %v, %v; want status %d", path, res, err, want)
		}
	}
	_, err := f.FetchContent(ctx, srv.URL+"/none", Conditions{})
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.MIME != OctetStream || rej.Why != "matches no accept_mime pattern" {
		t.Errorf("/none without Content-Type: %v; want rejected as %s", err, OctetStream)
	}
}

// A max_body_bytes_rules cap replaces max_body_bytes for its media type,
// also above it, and the byte-exact copy has room for the larger cap.
func TestFetchBodyCapPerMediaType(t *testing.T) {
	body := strings.Repeat("x", 8<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", strings.TrimPrefix(r.URL.Path, "/"))
		w.Write([]byte(body))
	}))
	defer srv.Close()
	o := loopbackOpts()
	o.MaxBodyBytes = 4 << 10
	o.Content = mustRules(t, nil, nil, []config.BodyRule{{MIME: "image/*", MaxBytes: 1024}, {MIME: "text/*", MaxBytes: 1 << 20}})
	f := newFetcher(t, o)
	for mt, want := range map[string]int{"image/png": 1024, "text/plain": 8 << 10, "application/json": 4 << 10} {
		res, err := f.Fetch(context.Background(), srv.URL+"/"+mt)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Body) != want || res.Truncated != (want < len(body)) {
			t.Errorf("%s: %d bytes (truncated %v), want %d", mt, len(res.Body), res.Truncated, want)
		}
		if res.RawResponse == nil {
			t.Errorf("%s: no byte-exact copy", mt)
		}
	}
}
