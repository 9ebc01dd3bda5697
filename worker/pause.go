package worker

import "errors"

// errPaused is why an item claimed before a pause is released unfetched.
var errPaused = errors.New("crawl paused before the fetch started")

// pausedRelease enforces pause at the last moment: if the config in force
// is paused, it frees the politeness slot (release, if not nil), abandons
// the attempt (its claim is released uncompleted) and returns true, so no
// fetch (robots.txt or page) starts once the worker runs, and so reports,
// a paused config version. Items wait in politeness for up to a
// Crawl-delay, so a check at claim time alone is not enough. The config is
// read atomically with the decision; the status node reports a version
// only after it is in force.
func (a *attempt) pausedRelease(release func()) bool {
	if !a.w.current().cfg.Paused {
		return false
	}
	if release != nil {
		release()
	}
	a.abandon(errPaused)
	return true
}
