package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/worker"
)

// standbyWorkers returns the workers in standby under root
// (coord.StandbyRoot: out of the worker list because their output writes
// fail), as status rows marked Standby; now dates their heartbeats.
func standbyWorkers(ctx context.Context, client *coord.Client, root string, now time.Time) ([]workerDoc, error) {
	ids, statuses, err := coord.Members(ctx, client, coord.StandbyRoot(root))
	if err != nil {
		return nil, fmt.Errorf("list standby workers: %w", err)
	}
	var out []workerDoc
	for _, id := range ids {
		wd := workerDoc{Status: worker.Status{ID: id}, Standby: true}
		if err := json.Unmarshal(statuses[id], &wd.Status); err != nil {
			wd.StatusError = fmt.Sprintf("unreadable status node: %v", err)
		} else {
			wd.HeartbeatAgeS = roundTo(max(0, now.Sub(wd.Heartbeat).Seconds()), 1)
		}
		out = append(out, wd)
	}
	return out, nil
}
