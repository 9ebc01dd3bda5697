package testenv

// Readings of a running ZooKeeper server through its four letter words, and
// its write ceiling measured with raw multis: what a benchmark or a test
// reads of the server itself rather than of zkcrawl's layout.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZKStats is one reading of a server's `srvr` and `mntr` four letter words
// (ZooKeeper Administrator's Guide, "The Four Letter Words").
type ZKStats struct {
	// Zxid is srvr's last committed zxid: every write transaction (a
	// multi counting once, a failed write and session creation and
	// closing included) increments it; reads do not.
	Zxid int64
	// Version is srvr's "Zookeeper version" line.
	Version string
	// DataBytes is mntr's zk_approximate_data_size: the data plus the path
	// bytes of every znode.
	DataBytes int64
	// Znodes is mntr's zk_znode_count.
	Znodes int64
}

// ReadZKStats sends `srvr` and `mntr` to addr and parses the figures of
// ZKStats. addr may be an ensemble's connect string ("h:p,h:p,h:p"): every
// member is asked and the reading of the highest zxid returned, the
// member that has committed the most (the leader, once writes have
// settled). Errors: an exchange failed (FourLetterWord), or a figure is
// missing or malformed (the error names the word, the key and the value).
func ReadZKStats(ctx context.Context, addr string) (ZKStats, error) {
	var best ZKStats
	for i, a := range strings.Split(addr, ",") {
		s, err := readZKStats(ctx, a)
		if err != nil {
			return s, err
		}
		if i == 0 || s.Zxid > best.Zxid {
			best = s
		}
	}
	return best, nil
}

// readZKStats is ReadZKStats of one server.
func readZKStats(ctx context.Context, addr string) (ZKStats, error) {
	var s ZKStats
	srvr, err := fourLetterFields(ctx, addr, "srvr", ":")
	if err != nil {
		return s, err
	}
	if s.Zxid, err = strconv.ParseInt(strings.TrimPrefix(srvr["Zxid"], "0x"), 16, 64); err != nil {
		return s, fmt.Errorf("testenv: srvr from %s: Zxid %q: %w", addr, srvr["Zxid"], err)
	}
	s.Version = srvr["Zookeeper version"]
	mntr, err := fourLetterFields(ctx, addr, "mntr", "\t")
	if err != nil {
		return s, err
	}
	for key, dst := range map[string]*int64{"zk_approximate_data_size": &s.DataBytes, "zk_znode_count": &s.Znodes} {
		if *dst, err = strconv.ParseInt(mntr[key], 10, 64); err != nil {
			return s, fmt.Errorf("testenv: mntr from %s: %s %q: %w", addr, key, mntr[key], err)
		}
	}
	return s, nil
}

// fourLetterFields sends word to addr and returns its answer's
// "key<sep>value" lines by key (`srvr` separates with ":", `mntr` with a
// tab). Errors: the exchange failed, or the answer has no such line.
func fourLetterFields(ctx context.Context, addr, word, sep string) (map[string]string, error) {
	out, err := FourLetterWord(ctx, addr, word)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for line := range strings.Lines(out) {
		if k, v, ok := strings.Cut(line, sep); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("testenv: %s from %s: no key/value lines in %q", word, addr, strings.TrimSpace(out))
	}
	return m, nil
}

// consLine matches a session of the `cons` four letter word: its id and
// the negotiated timeout in milliseconds.
var consLine = regexp.MustCompile(`sid=0x([0-9a-f]+).*\bto=(\d+)`)

// SessionTimeouts returns the timeout the server at addr granted each
// session connected to it, by session id, from the `cons` four letter word
// (its `to=` field, ZooKeeper Administrator's Guide). Errors: the exchange
// failed.
func SessionTimeouts(ctx context.Context, addr string) (map[int64]time.Duration, error) {
	out, err := FourLetterWord(ctx, addr, "cons")
	if err != nil {
		return nil, err
	}
	got := map[int64]time.Duration{}
	for line := range strings.Lines(out) {
		m := consLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, err1 := strconv.ParseUint(m[1], 16, 64)
		ms, err2 := strconv.ParseInt(m[2], 10, 64)
		if err1 == nil && err2 == nil {
			got[int64(id)] = time.Duration(ms) * time.Millisecond
		}
	}
	return got, nil
}

// Ceiling is what WriteCeiling measured.
type Ceiling struct {
	Multis, Errors int64         // multis committed, and failed
	Elapsed        time.Duration // from the first multi sent to the last answered
	ZxidDelta      int64         // the server's write transactions over that time (ReadZKStats)
}

// WriteCeiling measures the write ceiling of the server at addr (or of the
// ensemble of the connect string addr, the sessions spread over its
// members by go-zookeeper and the zxid read as ReadZKStats does): sessions
// sessions, each with inFlight goroutines, send multis of `create` and
// `delete` of a znode of their own (one transaction each, nothing left
// behind) under a scratch parent /ceiling-<nanotime>, for d. The multis go
// straight through go-zookeeper, one transaction per multi, so that what is
// measured is the server, not a client's batching. go-zookeeper's calls
// take no context: each loop ends at the deadline or once ctx ends. The
// sessions are opened (RawConn, each with its session) before the clock starts.
// Errors: a session not established within 30 s, the scratch parent not
// created or removed, or the server's zxid unreadable.
func WriteCeiling(ctx context.Context, addr string, sessions, inFlight int, d time.Duration) (Ceiling, error) {
	var c Ceiling
	conns := make([]*zk.Conn, 0, sessions)
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	for range sessions {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		conn, err := RawConn(cctx, addr, "")
		cancel()
		if err != nil {
			return c, fmt.Errorf("testenv: write ceiling: %w", err)
		}
		conns = append(conns, conn)
	}
	root := fmt.Sprintf("/ceiling-%d", time.Now().UnixNano())
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conns[0].Create(root, nil, 0, acl); err != nil {
		return c, fmt.Errorf("testenv: write ceiling: create %s: %w", root, err)
	}
	before, err := ReadZKStats(ctx, addr)
	if err != nil {
		return c, err
	}
	var ok, failed atomic.Int64
	t0 := time.Now()
	deadline := t0.Add(d)
	var wg sync.WaitGroup
	for i, conn := range conns {
		for j := range inFlight {
			wg.Go(func() {
				p := fmt.Sprintf("%s/c%d-%d", root, i, j)
				for time.Now().Before(deadline) && ctx.Err() == nil {
					if _, err := conn.Multi(&zk.CreateRequest{Path: p, Acl: acl}, &zk.DeleteRequest{Path: p, Version: -1}); err != nil {
						failed.Add(1)
					} else {
						ok.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	c = Ceiling{Multis: ok.Load(), Errors: failed.Load(), Elapsed: time.Since(t0)}
	after, err := ReadZKStats(ctx, addr)
	if err != nil {
		return c, err
	}
	c.ZxidDelta = after.Zxid - before.Zxid
	if err := conns[0].Delete(root, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return c, fmt.Errorf("testenv: write ceiling: delete %s: %w", root, err)
	}
	return c, nil
}
