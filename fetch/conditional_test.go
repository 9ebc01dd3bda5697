package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FetchIf sends the usable validators and shows them in the raw request; a
// date in the future and an ETag with a control character are not sent
// (the latter would make the request invalid); a 304 is not a redirect,
// whatever Location it carries.
func TestFetchIfSendsValidators(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte("full"))
	}))
	t.Cleanup(srv.Close)
	f := newFetcher(t, loopbackOpts())
	lm := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	cases := []struct {
		name        string
		cond        Conditions
		inm, ims    string
		status      int
		conditional bool
	}{
		{"both", Conditions{ETag: `W/"v1"`, ModifiedSince: lm}, `W/"v1"`, "Fri, 02 Jan 2026 02:04:05 GMT", 304, true},
		{"etag only", Conditions{ETag: ` "v2" `}, `"v2"`, "", 304, true},
		{"date only", Conditions{ModifiedSince: lm}, "", "Fri, 02 Jan 2026 02:04:05 GMT", 304, true},
		{"future date", Conditions{ModifiedSince: time.Now().Add(time.Hour)}, "", "", 200, false},
		{"control character", Conditions{ETag: "\"a\x01b\""}, "", "", 200, false},
		{"none", Conditions{}, "", "", 200, false},
	}
	for _, c := range cases {
		res, err := f.FetchIf(context.Background(), srv.URL+"/p", c.cond)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Get("If-None-Match") != c.inm || got.Get("If-Modified-Since") != c.ims {
			t.Errorf("%s: sent If-None-Match %q If-Modified-Since %q, want %q %q", c.name,
				got.Get("If-None-Match"), got.Get("If-Modified-Since"), c.inm, c.ims)
		}
		if res.Status != c.status || res.Conditional != c.conditional || res.Redirect != "" {
			t.Errorf("%s: status %d conditional %v redirect %q, want %d %v none", c.name, res.Status, res.Conditional, res.Redirect, c.status, c.conditional)
		}
		raw := string(res.RawRequest)
		if (c.inm != "") != strings.Contains(raw, "\r\nIf-None-Match: "+c.inm+"\r\n") ||
			(c.ims != "") != strings.Contains(raw, "\r\nIf-Modified-Since: "+c.ims+"\r\n") {
			t.Errorf("%s: raw request does not show what was sent:\n%s", c.name, raw)
		}
	}
}
