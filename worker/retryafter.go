package worker

import (
	"time"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// answered reports res, a response from the politeness key key, to the
// key's politeness (fetch.Politeness.Answered): a 429 or 503 holds the key
// for its Retry-After (capped at max_retry_after_s) or its backoff,
// whichever is longer; other answers let a backoff recover. A Retry-After
// over the cap is logged as a warning naming the key, the URL and the
// value, once per episode of the key's backoff; one that does not parse is
// ignored (logged at debug). It runs
// before the request's politeness slot is released, so no request of the
// key starts before the hold is in place. Nil res or an empty key: no-op.
func (w *Worker) answered(key string, res *fetch.Result) {
	if res == nil || key == "" || w.polite.MaxHold() <= 0 {
		return
	}
	var wait time.Duration
	raw := res.Header.Get("Retry-After")
	if fetch.Throttled(res.Status) && raw != "" {
		d, err := fetch.ParseRetryAfter(raw, time.Now())
		if err != nil {
			w.log.Debug("Retry-After ignored", "key", key, "url", res.URL, "status", res.Status, "error", err)
		} else {
			wait = d
		}
	}
	until, capped := w.polite.Answered(key, res.Status, wait)
	if capped {
		w.log.Warn("Retry-After over max_retry_after_s: capped", "key", key, "url", res.URL,
			"status", res.Status, "retry_after", raw, "max_retry_after_s", w.polite.MaxHold().Seconds())
	}
	if wait > 0 && !until.IsZero() {
		w.metrics.retryAfter()
	}
}

// retryNotBefore is when the item of a failed attempt may be tried again:
// the retry backoff's time (retryAt) or, when later, the end of its key's
// hold (fetch.Politeness.HeldUntil, a Retry-After or 429/503 backoff)
// moved onto ZooKeeper's clock.
func (w *Worker) retryNotBefore(at time.Time, key string) time.Time {
	held := w.polite.HeldUntil(key)
	if held.IsZero() {
		return at
	}
	if h := w.clusterNow().Add(time.Until(held)); h.After(at) {
		return h
	}
	return at
}

// keyOfURL is the politeness key of a raw URL (frontier.Layout.Key of its
// normalized form), "" when it does not normalize or has none.
func (w *Worker) keyOfURL(raw string) string {
	u, err := frontier.Normalize(raw)
	if err != nil {
		return ""
	}
	return w.layout.Key(u)
}
