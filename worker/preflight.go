package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
)

// ErrDrainPending is returned by New when the crawl has a pending drain
// (R/drain exists): a worker started now would exit at once. The drain stays
// until an operator lifts it with 'crawlctl drain --cancel' (docs/design.md
// "Drain"); the error message names that command.
var ErrDrainPending = errors.New("a drain is pending")

// ErrIDInUse is returned by New when a live worker already runs under the
// same id in the crawl (its status node R/workers/<id> is refreshed by
// another session while New watches it).
var ErrIDInUse = errors.New("worker id already in use by a live worker")

// preflight refuses to start a worker that could only exit at once or wait
// for ever: a pending drain (ErrDrainPending) or an id held by a live worker
// (ErrIDInUse). A status node left by a killed incarnation of this id (its
// heartbeat no longer moves) is not an error: Join waits for its session to
// expire, at most the session timeout ZooKeeper granted it.
func (w *Worker) preflight(ctx context.Context) error {
	note, _, err := coord.Store(w.client, w.root, coord.DrainNode).Read(ctx)
	switch {
	case err == nil:
		return fmt.Errorf("%w on crawl %q (%s): a worker started now would exit at once; run 'crawlctl --crawl %s drain --cancel' to crawl again",
			ErrDrainPending, w.opts.Crawl, note, w.opts.Crawl)
	case !errors.Is(err, coord.ErrNotFound):
		return fmt.Errorf("worker: read the drain request: %w", err)
	}
	return w.checkIDFree(ctx)
}

// checkIDFree reads R/workers/<id>; if it exists it watches it for two
// heartbeat intervals and a second: a node whose data changes meanwhile
// belongs to a live worker (ErrIDInUse, naming its host and pid).
func (w *Worker) checkIDFree(ctx context.Context) error {
	store := coord.Store(w.client, w.root, coord.WorkersNode, w.opts.ID)
	data, v0, err := store.Read(ctx)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("worker: read %s: %w", store, err)
	}
	var st Status
	_ = json.Unmarshal(data, &st)
	window := 2*w.opts.HeartbeatInterval + time.Second
	w.log.Info("worker id already registered: checking whether its holder is alive", "id", w.opts.ID,
		"host", st.Host, "pid", st.PID, "session", st.Session, "for", window)
	deadline := time.NewTimer(window)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			w.log.Warn("worker id held by a previous session that no longer heartbeats: waiting for ZooKeeper to expire it",
				"id", w.opts.ID, "session", st.Session)
			return nil
		case <-tick.C:
		}
		_, v, err := store.Read(ctx)
		switch {
		case errors.Is(err, coord.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("worker: read %s: %w", store, err)
		case v != v0:
			return fmt.Errorf("%w: id %q runs on host %s, pid %d (session %s); give each crawler of crawl %q its own --id",
				ErrIDInUse, w.opts.ID, st.Host, st.PID, st.Session, w.opts.Crawl)
		}
	}
}
