package worker

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
	"github.com/zkcrawl/zkcrawl/storage"
)

// Recrawl in the pipeline (docs/design.md, "Recrawl"). A ready item whose
// Prev is set (the URL's last capture) is fetched conditionally with
// Prev's validators (conditionsOf). The answer is stored as:
//
//   - a revisit record, profile server-not-modified (WARC 1.1 section
//     6.7.3), for a 304 to a conditional request;
//   - a revisit record, profile identical-payload-digest (section 6.7.2),
//     for a complete 2xx whose payload digest starts with Prev.Digest (its
//     6 bytes: frontier.SameDigest; false "unchanged" odds 2^-48 per
//     comparison);
//   - a response record otherwise.
//
// Both revisits refer to Prev.Time, the original response's date: a capture
// made by a revisit keeps Prev.Time and Prev.Digest, so a revisit never
// refers to another revisit. A 304 to a request that carried no condition
// (no Prev, or a Prev with no validator to send) says nothing about a
// capture: the URL is fetched once more without conditions (logged), and a
// second 304 is stored as a plain response, so a server that answers 304 to
// everything costs one extra fetch per URL, never a loop. With config
// recrawl on, every final HTTP response (not a fetch error, a retry or a
// robots.txt refusal) hands the frontier the URL's recrawl schedule entry
// (scheduleEntry) in the same Enqueue call as the page's links, before the
// item is completed.

// conditionsOf returns the validators a fetch of a URL whose last capture
// is prev sends (fetch.Conditions: ETag as If-None-Match, LastModified as
// If-Modified-Since, each when usable); none when prev is nil or has no
// time (not a capture a revisit could refer to).
func conditionsOf(prev *frontier.Capture) fetch.Conditions {
	if prev == nil || prev.Time.IsZero() {
		return fetch.Conditions{}
	}
	return fetch.Conditions{ETag: prev.ETag, ModifiedSince: prev.LastModified}
}

// revisitOf returns the earlier capture the response res to item it is a
// revisit of, or nil when res is stored as a response record: a 304 to a
// conditional request (profile server-not-modified), or a complete 2xx
// whose payload digest starts with it.Prev.Digest (frontier.SameDigest,
// over the length kept) (profile identical-payload-digest); both refer to it.Prev.Time. The
// payload is hashed (ex.PayloadDigestOf, once for the whole store step)
// only when the item has a Prev with a digest.
func revisitOf(it frontier.Item, res *fetch.Result, ex *storage.Exchange) *storage.RevisitRef {
	prev := it.Prev
	if prev == nil || prev.Time.IsZero() {
		return nil
	}
	ref := &storage.RevisitRef{TargetURI: it.URL, Date: prev.Time}
	switch {
	case res.Status == http.StatusNotModified && res.Conditional:
		ref.Profile = storage.ProfileNotModified
	case res.Status >= 200 && res.Status <= 299 && !res.Truncated && prev.Digest != "" &&
		frontier.SameDigest(ex.PayloadDigestOf(), prev.Digest):
		ref.Profile = storage.RevisitProfile
	default:
		return nil
	}
	return ref
}

// refetchBogus304 reports whether res is a 304 to a request without
// conditions, which the item must be fetched again for (once, without
// conditions), and logs why.
func (a *attempt) refetchBogus304(res *fetch.Result) bool {
	if res == nil || res.Status != http.StatusNotModified || res.Conditional {
		return false
	}
	a.w.log.Info("304 Not Modified to a request without If-None-Match or If-Modified-Since (no stored capture to compare): fetching once more without conditions",
		"url", a.it.URL, "has_prev", a.it.Prev != nil)
	return true
}

// noteCapture notes what storing res as ex gave (info): the crawl-log
// line's revisit profile and, for a server-not-modified revisit, no payload
// digest (the record has none); the revisit counter; and, with config
// recrawl on, the URL's schedule entry to hand the frontier (a.next).
func (a *attempt) noteCapture(res *fetch.Result, ex storage.Exchange, info storage.ResponseInfo) {
	a.entry.Revisit = storage.RevisitName(info.Profile)
	if info.Profile == storage.ProfileNotModified {
		a.entry.Digest = ""
	}
	a.w.metrics.revisit(a.entry.Revisit)
	if a.live.cfg.Recrawl {
		next := a.scheduleEntry(res, ex, info)
		a.next = &next
	}
}

// scheduleEntry returns the recrawl schedule entry of the item after res
// was stored as ex (info): the item's URL, depth, hops, lastmod,
// priority and changefreq, with Prev the capture just made (frontier.Capture):
//
//   - Time and Digest name the response record holding the payload: for a
//     revisit of it.Prev, it.Prev's own (the original response); for a
//     response record, its WARC-Date (truncated to seconds) and payload
//     digest prefix; for a revisit that storage made of another capture,
//     its WARC-Date and no digest and no validators (the digest index's
//     revisit of another URL's response, or the writer's own: no later
//     revisit may refer to a revisit, so the next fetch is unconditional).
//   - ETag and LastModified are the response's validators (captureValidators);
//     a 304 that repeats neither keeps it.Prev's, as a cache freshens its
//     stored response (RFC 9111 section 4.3.4).
//   - IntervalS is it.Prev's (0 without one); the owner adapts it.
//   - Fetched is this fetch's time when it is later than Time (a revisit):
//     the next due time counts from it, not from the original capture.
//   - Changed is false for a revisit, and for a response whose digest
//     starts with it.Prev.Digest (frontier.SameDigest: an error page
//     served again unchanged); true otherwise.
func (a *attempt) scheduleEntry(res *fetch.Result, ex storage.Exchange, info storage.ResponseInfo) frontier.Item {
	it, prev := a.it, a.it.Prev
	date := ex.Date
	if date.IsZero() {
		date = time.Now()
	}
	c := frontier.Capture{Time: date.UTC().Truncate(time.Second), Digest: frontier.DigestPrefix(info.PayloadDigest), Changed: true}
	other := false // a revisit of another capture: nothing of this URL's to refer to
	switch {
	case info.Revisit && prev != nil && ex.RevisitOf != nil && ex.RevisitOf.TargetURI == it.URL && ex.RevisitOf.Date.Equal(prev.Time):
		c.Time, c.Digest, c.Changed = prev.Time, prev.Digest, false
	case info.Revisit:
		c.Digest, c.Changed, other = "", false, true
	case prev != nil && frontier.SameDigest(info.PayloadDigest, prev.Digest):
		c.Changed = false
	}
	c.ETag, c.LastModified = a.captureValidators(res, c.Time)
	if other {
		// No validators either: a 304 to them would make a revisit of
		// this revisit. The next fetch is unconditional.
		c.ETag, c.LastModified = "", time.Time{}
	} else if res.Status == http.StatusNotModified && prev != nil {
		if res.Header.Get("ETag") == "" {
			c.ETag = prev.ETag
		}
		if res.Header.Get("Last-Modified") == "" {
			c.LastModified = prev.LastModified
		}
	}
	if prev != nil {
		c.IntervalS = prev.IntervalS
	}
	if fetched := date.UTC().Truncate(time.Second); fetched.After(c.Time) {
		c.Fetched = fetched // a revisit: the schedule counts from this fetch
	}
	return frontier.Item{URL: it.URL, Depth: it.Depth, Hops: it.Hops, Lastmod: it.Lastmod, Priority: it.Priority, Changefreq: it.Changefreq, Prev: &c}
}

// captureValidators returns the validators of res a capture at time at
// keeps: the ETag when it is a valid entity tag (fetch.ValidETag) of at
// most frontier.MaxETagBytes, else ""; the Last-Modified parsed with
// http.ParseTime (RFC 9110 section 5.6.7: IMF-fixdate and the two obsolete
// forms), UTC, when it parses and is not later than at, else zero. What is
// dropped is logged at debug level.
func (a *attempt) captureValidators(res *fetch.Result, at time.Time) (etag string, lastModified time.Time) {
	if v := strings.TrimSpace(res.Header.Get("ETag")); v != "" {
		switch {
		case len(v) > frontier.MaxETagBytes:
			a.w.log.Debug("ETag not kept: longer than frontier.MaxETagBytes", "url", a.it.URL, "bytes", len(v), "max", frontier.MaxETagBytes)
		case !fetch.ValidETag(v):
			a.w.log.Debug("ETag not kept: not visible ASCII", "url", a.it.URL, "etag", v)
		default:
			etag = v
		}
	}
	if v := res.Header.Get("Last-Modified"); v != "" {
		t, err := http.ParseTime(v)
		switch {
		case err != nil:
			a.w.log.Debug("Last-Modified not kept: not an HTTP date", "url", a.it.URL, "last_modified", v)
		case t.After(at):
			a.w.log.Debug("Last-Modified not kept: later than the capture", "url", a.it.URL, "last_modified", v, "capture", at)
		default:
			lastModified = t.UTC()
		}
	}
	return etag, lastModified
}

// newRevisitCounter returns zkcrawl_revisits_total.
func newRevisitCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "zkcrawl", Name: "revisits_total",
		Help: "Responses stored as WARC revisit records, by profile: server-not-modified (a 304 to a conditional request) or identical-payload-digest (the payload of an earlier capture).",
	}, []string{"profile"})
}

// revisit counts one revisit record of profile (storage.RevisitName); ""
// (a response record) is not counted.
func (m *Metrics) revisit(profile string) {
	if m != nil && profile != "" {
		m.revisits.WithLabelValues(profile).Inc()
	}
}
