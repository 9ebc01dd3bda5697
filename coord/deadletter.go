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
			lost = lost || isConnectionLoss(err)
			return err
		}
	}, nil)
	return name, err
}

// Fail moves the item to the dead letters with data (the item plus its
// last error), R/failed/<shard>-<item>, under a cap of max dead letters
// (max <= 0: none). Uncapped it is one multi of check(session marker),
// check(claim, version), create(dead letter), delete(item), delete(claim).
// Capped, when R/failed already holds max of them the item is completed
// instead (Complete: it leaves the queue unkept; the caller's own log is
// its record) and Fail reports false. The count and the move are one
// transaction: the multi also sets R/failed's data, on the condition that
// its version is still the one read with the count (ZooKeeper recipes:
// compare-and-set), so concurrent capped Fails from any number of
// processes never take R/failed past max; a caller that loses the race
// counts again. Cost of a cap: one exists read of R/failed per call, plus
// one more per lost race. Dead letters made uncapped while a cap is in
// force count towards it but are not held back by it.
//
// Errors: as Complete's; ErrNotInitialized when R/failed is missing
// (capped).
func (cl *Claim) Fail(ctx context.Context, data []byte, max int64) (deadLettered bool, err error) {
	if max <= 0 {
		return true, cl.fail(ctx, data)
	}
	fp := cl.q.root + "/" + failedDir
	for {
		var ok bool
		var st *zk.Stat
		err := cl.q.c.retry(ctx, func(ctx context.Context) error {
			var err error
			ok, st, err = cl.q.c.exists(ctx, fp)
			return err
		})
		switch {
		case err != nil:
			return false, fmt.Errorf("coord: Claim.Fail %s/%s: counting dead letters: %w", ShardName(cl.shard), cl.name, err)
		case !ok:
			return false, fmt.Errorf("coord: Claim.Fail %s/%s: %w", ShardName(cl.shard), cl.name, ErrNotInitialized)
		case int64(st.NumChildren) >= max:
			return false, cl.Complete(ctx)
		}
		err = cl.fail(ctx, data, &zk.SetDataRequest{Path: fp, Data: nil, Version: st.Version})
		if errors.Is(err, zk.ErrBadVersion) {
			continue // another dead letter came or went since the count: count again
		}
		return err == nil, err
	}
}
