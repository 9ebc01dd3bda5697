package worker

import "errors"

// errPaused is why an item claimed before a pause is released unfetched.
var errPaused = errors.New("crawl paused before the fetch started")

// abandonIfPaused enforces pause before a fetch: if the config in force
// is paused, it abandons the attempt (its claim is released uncompleted)
// and returns true, so no fetch (robots.txt or page) starts once the
// worker runs, and so reports, a paused config version. attempt.request
// checks again with the politeness slot held: items wait in politeness
// for up to a Crawl-delay, so a check at claim time alone is not enough.
// The config is read atomically with the decision; the status node
// reports a version only after it is in force.
func (a *attempt) abandonIfPaused() bool {
	if !a.w.current().cfg.Paused {
		return false
	}
	a.abandon(errPaused)
	return true
}
