package coord

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Failed lists the dead letters (names "<shard>-<item>", sorted).
func (q *Queue) Failed(ctx context.Context) ([]string, error) {
	if q.initErr != nil {
		return nil, q.initErr
	}
	names, err := q.c.readChildren(ctx, q.root+"/"+failedDir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.Failed %s: %w", q.name, ErrNotInitialized)
	}
	sort.Strings(names)
	return names, err
}

// FailedData returns a dead letter's data (as given to Claim.Fail).
// Errors: ErrNotFound if there is no such dead letter.
func (q *Queue) FailedData(ctx context.Context, name string) ([]byte, error) {
	if _, err := q.failedShard(name); err != nil {
		return nil, err
	}
	data, _, err := q.c.readData(ctx, q.failedPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("coord: Queue.FailedData %s: %w", name, ErrNotFound)
	}
	return data, err
}

// failedShard parses the shard of a dead-letter name "sNNN-<item>".
func (q *Queue) failedShard(name string) (int, error) {
	if q.initErr != nil {
		return 0, q.initErr
	}
	if err := validateName(name); err != nil {
		return 0, fmt.Errorf("coord: dead letter %q: %w", name, err)
	}
	i := strings.IndexByte(name, '-')
	if i < 2 || name[0] != 's' {
		return 0, fmt.Errorf("coord: dead letter %q: want \"sNNN-<item>\": %w", name, ErrInvalidArgument)
	}
	shard, err := strconv.Atoi(name[1:i])
	if err != nil || shard < 0 || shard >= q.shards {
		return 0, fmt.Errorf("coord: dead letter %q: shard %q not in [0, %d): %w", name, name[1:i], q.shards, ErrInvalidArgument)
	}
	return shard, nil
}

// Requeue moves dead letter failedName back to the end of its shard's queue
// in one multi: delete(R/failed/<name>, version) and create(R/queue/<shard>/u-,
// sequential). data replaces the item's data; nil keeps the dead letter's
// data. It returns the new item name. After connection loss the multi is
// resent; a missing dead letter then means the earlier attempt committed
// (the name is then "", lost with the reply), so the item is never queued
// twice.
//
// Errors: ErrNotFound if the dead letter does not exist (someone else
// requeued it); ErrInvalidArgument for a malformed name.
func (q *Queue) Requeue(ctx context.Context, failedName string, data []byte) (string, error) {
	shard, err := q.failedShard(failedName)
	if err != nil {
		return "", err
	}
	fp := q.failedPath(failedName)
	name, lost := "", false // lost: a multi's reply was lost
	err = q.c.retryWrite(ctx, func(ctx context.Context) error {
		for {
			old, st, err := q.c.get(ctx, fp)
			if errors.Is(err, zk.ErrNoNode) {
				if lost {
					return nil // our earlier attempt moved it
				}
				return fmt.Errorf("coord: Queue.Requeue %s: %w", failedName, ErrNotFound)
			}
			if err != nil {
				return err
			}
			d := data
			if d == nil {
				d = old
			}
			res, idx, err := q.c.multi(ctx, nil,
				&zk.DeleteRequest{Path: fp, Version: st.Version},
				q.readyCreate(shard, d),
			)
			switch {
			case err == nil:
				name = path.Base(res[1].String)
				return nil
			case idx == 0 && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion)):
				continue // gone or changed since we read it: look again
			case idx == 1 && errors.Is(err, zk.ErrNoNode):
				return fmt.Errorf("coord: Queue.Requeue %s: %w", failedName, ErrNotInitialized)
			case idx >= 0:
				return fmt.Errorf("coord: Queue.Requeue %s: %w", failedName, err)
			}
			lost = lost || IsConnectionLoss(err)
			return err
		}
	}, nil)
	return name, err
}
