package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"
)

// TestWgetMirrorListsThePagesItSaved: the pages reachable from the start
// page are listed by URL, a 404 among the links is no error, and the WARC
// file is written. Skipped without wget.
func TestWgetMirrorListsThePagesItSaved(t *testing.T) {
	if _, err := exec.LookPath("wget"); err != nil {
		t.Skip("wget is not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.html":
			fmt.Fprint(w, `<a href="a%20b.html">a</a> <a href="gone.html">gone</a>`)
		case "/a b.html":
			fmt.Fprint(w, `<p>a</p>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := WgetMirror(ctx, srv.URL+"/index.html", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pages) != 2 || !m.Pages[srv.URL+"/index.html"] || !m.Pages[srv.URL+"/a%20b.html"] || m.WARCBytes == 0 {
		t.Fatalf("WgetMirror = %+v; want index.html and a%%20b.html, and a WARC file", m)
	}
}
