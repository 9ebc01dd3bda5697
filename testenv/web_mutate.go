package testenv

// Changing pages: with WebConfig.Mutate on, every host's "/" and /p/<n>
// change over time, each as its own Poisson process whose mean interval is
// drawn log-uniformly from [ChangeMin, ChangeMax] (the model of page change
// in Cho and Garcia-Molina, "Estimating frequency of change", 2003). A
// page's change times come from a PRNG seeded by (Seed, host index, path),
// so its version at any time is computed, not kept: no goroutine or state
// per page. The link graph never changes; only a version line in the body
// does. Each version is served with ETag "v<N>" and Last-Modified its
// change time, and If-None-Match / If-Modified-Since are honoured with 304
// by net/http's ServeContent (RFC 9110 section 13.2.2 order: If-None-Match
// first, If-Modified-Since only without it).

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// webMinChangeInterval bounds WebMutate.ChangeMin from below, so the cost
// of computing a version (one PRNG draw per change since Start) stays
// small: about 100,000 draws, a few milliseconds, per request after a day.
const webMinChangeInterval = 10 * time.Millisecond

// WebMutate makes the pages "/" and /p/<n> of every host change at known
// random rates. The zero value turns it off: pages never change.
type WebMutate struct {
	// ChangeMin and ChangeMax bound each page's mean change interval, drawn
	// log-uniformly from [ChangeMin, ChangeMax] per (Seed, host index,
	// path); the intervals between changes are exponential with that mean.
	// Both 0: off. Otherwise ChangeMin >= 10 ms and ChangeMax >= ChangeMin.
	ChangeMin, ChangeMax time.Duration
	// Start is when every page has version 0; the zero value means when
	// StartWeb validates the config (Web.Config reports the time used).
	Start time.Time
}

// On reports whether pages change.
func (m WebMutate) On() bool { return m.ChangeMax > 0 }

// validateMutate checks cfg.Mutate and fills in its Start.
func (cfg *WebConfig) validateMutate() error {
	m := &cfg.Mutate
	if m.ChangeMin == 0 && m.ChangeMax == 0 {
		return nil
	}
	if m.ChangeMin < webMinChangeInterval || m.ChangeMax < m.ChangeMin {
		return fmt.Errorf("%w: Mutate change interval range [%v, %v]: want %v <= min <= max",
			ErrWebConfig, m.ChangeMin, m.ChangeMax, webMinChangeInterval)
	}
	if m.Start.IsZero() {
		m.Start = time.Now()
	}
	return nil
}

// WebChange is one version of a changing page.
type WebChange struct {
	// URL is the page, "http://127.0.0.1:port/path".
	URL string
	// Version counts the page's changes: 0 from Mutate.Start, N after the
	// N-th change.
	Version int
	// Time is when the version began (Mutate.Start for version 0).
	Time time.Time
	// Mean is the page's mean change interval.
	Mean time.Duration
	// Digest is the SHA-1 of the version's body as a WARC payload digest
	// writes it: "sha1:" and RFC 4648 base32, as in a crawl log line.
	Digest string
}

// webChanger walks one page's change times, offsets from Mutate.Start.
type webChanger struct {
	rng  *rand.Rand
	mean float64       // mean interval, nanoseconds
	at   time.Duration // time of the current version
}

// changer returns the change process of path on host h, at version 0.
func (w *Web) changer(h int, path string) *webChanger {
	f := fnv.New64a()
	fmt.Fprintf(f, "%d|%s", h, path)
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed)^0x6d75_7461_7465, f.Sum64()))
	lo, hi := float64(w.cfg.Mutate.ChangeMin), float64(w.cfg.Mutate.ChangeMax)
	return &webChanger{rng: rng, mean: lo * math.Pow(hi/lo, rng.Float64())}
}

// next moves to the next version and returns its time: an exponential
// draw of mean c.mean after the current one, at least 1 ms.
func (c *webChanger) next() time.Duration {
	c.at += max(time.Duration(c.rng.ExpFloat64()*c.mean), time.Millisecond)
	return c.at
}

// mutates reports whether target of a host changes: "/" and /p/<n> with
// Mutate on.
func (w *Web) mutates(target string) bool {
	return w.cfg.Mutate.On() && (target == "/" || strings.HasPrefix(target, "/p/"))
}

// Version returns the version of target on host index h at time t and when
// that version began; ok is false when the page does not change (Mutate
// off, or not "/" or an existing /p/<n>). Before Mutate.Start the version
// is 0. Cost: one PRNG draw per change up to t.
func (w *Web) Version(h int, target string, t time.Time) (version int, since time.Time, ok bool) {
	if h < 0 || h >= len(w.hosts) || !w.mutates(target) || w.route(h, target) == webNotFound {
		return 0, time.Time{}, false
	}
	start := w.cfg.Mutate.Start
	c := w.changer(h, target)
	for {
		at := c.at
		if start.Add(c.next()).After(t) {
			return version, start.Add(at), true
		}
		version++
	}
}

// MeanChangeInterval returns the mean change interval of target on host
// index h; ok as for Version.
func (w *Web) MeanChangeInterval(h int, target string) (time.Duration, bool) {
	if _, _, ok := w.Version(h, target, w.cfg.Mutate.Start); !ok {
		return 0, false
	}
	return time.Duration(w.changer(h, target).mean), true
}

// Changes returns every version of every changing page ("/" and /p/<n> of
// each host) that began at or before until, sorted by URL then version;
// nil with Mutate off. Each page renders once per version (for its Digest).
func (w *Web) Changes(until time.Time) []WebChange {
	if !w.cfg.Mutate.On() {
		return nil
	}
	start := w.cfg.Mutate.Start
	var out []WebChange
	for h := range w.hosts {
		targets := []string{"/"}
		for n := range w.PagesOf(h) {
			targets = append(targets, "/p/"+strconv.Itoa(n))
		}
		for _, target := range targets {
			c := w.changer(h, target)
			rt := w.route(h, target)
			url := w.urlOf(webTarget{h, target})
			for v := 0; !start.Add(c.at).After(until); v++ {
				out = append(out, WebChange{URL: url, Version: v, Time: start.Add(c.at),
					Mean: time.Duration(c.mean), Digest: webDigest(w.versionBody(rt, v))})
				c.next()
			}
		}
	}
	slices.SortFunc(out, func(a, b WebChange) int {
		if c := strings.Compare(a.URL, b.URL); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return out
}

// versionBody renders version v of a changing page: its usual HTML with a
// version paragraph at the end of the body.
func (w *Web) versionBody(rt *webRoute, v int) []byte {
	c := *rt
	c.body = nil
	c.tail = rt.tail + "<p id=\"version\">Version " + strconv.Itoa(v) + "</p>\n"
	return w.render(&c)
}

// webETag is the strong entity tag of version v (RFC 9110 section 8.8.3).
func webETag(v int) string { return "\"v" + strconv.Itoa(v) + "\"" }

// webDigest is b's SHA-1 as "sha1:" and RFC 4648 base32.
func webDigest(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// serveVersion answers a changing page with its current version: ETag,
// Last-Modified (the version's time, whole seconds on the wire) and 304 to
// a matching If-None-Match, or, without If-None-Match, to an
// If-Modified-Since at or after Last-Modified (http.ServeContent). Two
// changes within one second share a Last-Modified, so a client sending
// only If-Modified-Since can get a 304 for the later one (RFC 9110 section
// 8.8.2.2: such a date is a weak validator); ETags tell them apart.
func (w *Web) serveVersion(rw http.ResponseWriter, r *http.Request, h int, target string, rt *webRoute) {
	v, since, _ := w.Version(h, target, time.Now())
	hd := rw.Header()
	hd.Set("ETag", webETag(v))
	hd.Set("Content-Type", webHTMLType)
	http.ServeContent(rw, r, "", since, bytes.NewReader(w.versionBody(rt, v)))
}
