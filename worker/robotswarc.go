package worker

import (
	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/storage"
)

// robotsFetched is the worker's fetch.RobotsOptions.Fetched: every
// robots.txt response (each redirect hop its own, any status; those
// fetched for a seed's sitemaps too) is written to the WARC files as a
// request and response record pair (a revisit when its payload is already
// stored), as Heritrix stores its prerequisites, so a replay of the crawl
// shows what the crawler was told. It writes no crawl-log line: the crawl
// log holds one line per frontier item, and robots.txt is not one (it is
// fetched per worker and per cache TTL, outside the frontier). A write
// that fails is logged and dropped: the page that asked keeps its own
// path (its own write failing stops the worker's claims, outputFailed),
// and robots.txt is fetched again after its TTL. It runs inside the
// request's politeness slot (fetch.Robots), and a WARC write without
// fsync is quick; the records are fsynced with the next crawl-log line.
// A 429 or 503 with its Retry-After holds the key of res.URL (answered),
// before the slot frees.
func (w *Worker) robotsFetched(res *fetch.Result) {
	w.answered(w.keyOfURL(res.URL), res) // a 429/503 robots.txt holds its key too
	if w.store == nil {
		return // no outputs open (a test's worker that never ran)
	}
	_, err := w.store.WriteExchange(exchangeOf(res.URL, res))
	if err != nil {
		w.log.Warn("robots.txt response not written to the WARC file", "url", res.URL, "status", res.Status, "error", err)
	}
}

// exchangeOf is the WARC request/response pair of res, fetched for
// target (the item's URL; res.URL for robots.txt).
func exchangeOf(target string, res *fetch.Result) storage.Exchange {
	return storage.Exchange{
		TargetURI:         target,
		IP:                res.RemoteIP,
		Date:              res.Started,
		RawRequest:        res.RawRequest,
		RawResponseHeader: res.RawResponseHeader,
		RawResponse:       res.RawResponse,
		Body:              res.Body,
		Truncated:         res.Truncated,
		Protocols:         protocolsOf(res),
		CipherSuite:       res.CipherSuite,
	}
}
