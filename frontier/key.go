package frontier

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
)

// KeyLength is the length in hex characters of a seen-set key: the first
// 128 bits of SHA-256. 128 bits keep the chance of any collision below
// 1e-18 for a billion URLs (birthday bound) while halving the znode name
// length compared with the full digest, which matters because ZooKeeper
// keeps every path of the seen-set in memory.
const KeyLength = 32

// Key returns the seen-set dedup key of a normalized URL (see Normalize):
// lowercase hex of SHA-256(normURL) truncated to KeyLength characters. The
// marker znode is R/seen/<Bucket(key)>/<key>. Key does not normalize; pass
// it the output of Normalize or Resolve.
func Key(normURL string) string {
	sum := sha256.Sum256([]byte(normURL))
	return hex.EncodeToString(sum[:KeyLength/2])
}

// Bucket returns the seen-set bucket of a key: its first two hex characters
// (256 buckets, so each parent stays under ZooKeeper's practical
// getChildren limit of about 10,000 children up to ~2.5 million URLs). It
// returns "" for a key shorter than two characters.
func Bucket(key string) string {
	if len(key) < 2 {
		return ""
	}
	return key[:2]
}

// Shard returns the queue shard, in [0, shards), of a host key (see Host):
// FNV-1a 64 of the key modulo shards. The hash is stable across
// processes, versions and platforms, so one host's URLs always land in the
// same shard (politeness is then enforced by the one worker owning it). It
// returns 0 when shards < 1.
func Shard(host string, shards int) int {
	if shards < 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(host)) // hash.Hash.Write never fails
	return int(h.Sum64() % uint64(shards))
}
