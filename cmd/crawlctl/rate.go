package main

import (
	"encoding/json"
	"time"

	"github.com/zkcrawl/zkcrawl/worker"
)

// rateTracker derives each worker's pages per second from the page counter
// and heartbeat time it publishes in its status node: the rate between its
// two latest distinct heartbeats. Using the worker's own heartbeat times
// (not when crawlctl read them) keeps the rate exact whatever the refresh
// and heartbeat intervals are, and immune to clock skew between machines.
type rateTracker struct {
	workers map[string]*rateState
}

type rateState struct {
	session    string // a new session or restart starts over
	last, prev pageSample
	hasPrev    bool
}

type pageSample struct {
	at    time.Time
	pages int64
}

func newRateTracker() *rateTracker { return &rateTracker{workers: map[string]*rateState{}} }

// observe records one read of the live workers' status nodes; workers that
// are gone are forgotten.
func (r *rateTracker) observe(ids []string, statuses map[string][]byte) {
	live := make(map[string]bool, len(ids))
	for _, id := range ids {
		live[id] = true
		var st worker.Status
		if json.Unmarshal(statuses[id], &st) != nil || st.Heartbeat.IsZero() {
			continue
		}
		s := pageSample{at: st.Heartbeat, pages: st.Pages}
		w := r.workers[id]
		switch {
		case w == nil || w.session != st.Session || st.Pages < w.last.pages:
			r.workers[id] = &rateState{session: st.Session, last: s}
		case st.Heartbeat.After(w.last.at):
			w.prev, w.last, w.hasPrev = w.last, s, true
		}
	}
	for id := range r.workers {
		if !live[id] {
			delete(r.workers, id)
		}
	}
}

// rate returns a worker's pages per second, if two heartbeats were seen.
func (r *rateTracker) rate(id string) (float64, bool) {
	w := r.workers[id]
	if w == nil || !w.hasPrev {
		return 0, false
	}
	dt := w.last.at.Sub(w.prev.at).Seconds()
	if dt <= 0 {
		return 0, false
	}
	return float64(w.last.pages-w.prev.pages) / dt, true
}

// allRated reports whether every worker in ids has a rate.
func (r *rateTracker) allRated(ids []string) bool {
	for _, id := range ids {
		if _, ok := r.rate(id); !ok {
			return false
		}
	}
	return true
}
