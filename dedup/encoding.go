package dedup

// The stored form of keys and entries: compact binary, so that an entry
// costs little more than its URI (docs/design.md, "Digest index").

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// KeyPrefix starts every key of the index, so the index can share a redis
// database with other data: "d" and then the 20 raw bytes of the SHA-1
// digest (21 bytes in all).
const KeyPrefix = "d"

// MaxURIBytes bounds Entry.TargetURI and Entry.RecordID.
const MaxURIBytes = 8192

// ErrBadDigest is wrapped by errors for a digest that is not a SHA-1
// payload digest.
var ErrBadDigest = errors.New("dedup: not a SHA-1 payload digest")

// ErrBadEntry is wrapped by errors for an Entry that cannot be stored, and
// for a stored value that does not decode.
var ErrBadEntry = errors.New("dedup: bad entry")

// Key returns the redis key of digest: KeyPrefix and the 20 digest bytes.
// digest is "sha1:" and 32 base32 digits (RFC 4648 alphabet, as in a
// WARC-Payload-Digest) or, as some CDXJ indexes write it, the 32 digits
// alone; case does not matter. Errors wrap ErrBadDigest and name it.
func Key(digest string) (string, error) {
	d := digest
	if i := strings.IndexByte(d, ':'); i >= 0 {
		if !strings.EqualFold(d[:i], "sha1") {
			return "", fmt.Errorf("%w: %q: algorithm %q, want sha1", ErrBadDigest, digest, d[:i])
		}
		d = d[i+1:]
	}
	if len(d) != 32 {
		return "", fmt.Errorf("%w: %q: want 32 base32 digits", ErrBadDigest, digest)
	}
	raw, err := base32.StdEncoding.DecodeString(strings.ToUpper(d))
	if err != nil || len(raw) != 20 {
		return "", fmt.Errorf("%w: %q: not base32", ErrBadDigest, digest)
	}
	return KeyPrefix + string(raw), nil
}

// Stored values: a flags byte, the date as a uvarint of microseconds since
// 1970, then for a confirmed entry with a urn:uuid record ID its 16 bytes
// (flagUUID) or any other record ID as a uvarint length and its bytes
// (flagRecordID), and last the target URI's bytes (the rest of the value).
// A pending entry has neither record ID nor flagConfirmed.
const (
	flagConfirmed = 1 << iota
	flagUUID
	flagRecordID
)

// encode returns e's stored form, confirmed or pending. Errors wrap
// ErrBadEntry: no target URI, one or a record ID over MaxURIBytes, a date
// before 1970.
func encode(e Entry, confirmed bool) (string, error) {
	switch {
	case e.TargetURI == "":
		return "", fmt.Errorf("%w: no target URI", ErrBadEntry)
	case len(e.TargetURI) > MaxURIBytes || len(e.RecordID) > MaxURIBytes:
		return "", fmt.Errorf("%w: target URI or record ID over %d bytes", ErrBadEntry, MaxURIBytes)
	case e.Date.UnixMicro() <= 0:
		return "", fmt.Errorf("%w: %s: date %v is not after 1970", ErrBadEntry, e.TargetURI, e.Date)
	}
	b := make([]byte, 1, 1+binary.MaxVarintLen64+17+len(e.TargetURI))
	b = binary.AppendUvarint(b, uint64(e.Date.UnixMicro()))
	if confirmed {
		b[0] |= flagConfirmed
		if u, ok := recordUUID(e.RecordID); ok {
			b[0] |= flagUUID
			b = append(b, u[:]...)
		} else if e.RecordID != "" {
			b[0] |= flagRecordID
			b = binary.AppendUvarint(b, uint64(len(e.RecordID)))
			b = append(b, e.RecordID...)
		}
	}
	return string(append(b, e.TargetURI...)), nil
}

// recordUUID returns the UUID of a record ID in zkcrawl's canonical form,
// "<urn:uuid:" lower-case UUID ">", which it gives back exactly.
func recordUUID(id string) (uuid.UUID, bool) {
	s, ok := strings.CutPrefix(id, "<urn:uuid:")
	if !ok {
		return uuid.UUID{}, false
	}
	s, ok = strings.CutSuffix(s, ">")
	if !ok {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(s)
	if err != nil || u.String() != s {
		return uuid.UUID{}, false
	}
	return u, true
}

// decode is encode's inverse: the entry and whether it is confirmed.
// Errors wrap ErrBadEntry.
func decode(v []byte) (Entry, bool, error) {
	bad := fmt.Errorf("%w: stored value of %d bytes does not decode", ErrBadEntry, len(v))
	if len(v) < 2 {
		return Entry{}, false, bad
	}
	flags := v[0]
	us, n := binary.Uvarint(v[1:])
	if n <= 0 {
		return Entry{}, false, bad
	}
	rest := v[1+n:]
	var e Entry
	e.Date = time.UnixMicro(int64(us)).UTC()
	switch {
	case flags&flagUUID != 0:
		if len(rest) < 16 {
			return Entry{}, false, bad
		}
		u, _ := uuid.FromBytes(rest[:16])
		e.RecordID, rest = "<urn:uuid:"+u.String()+">", rest[16:]
	case flags&flagRecordID != 0:
		l, n := binary.Uvarint(rest)
		if n <= 0 || uint64(len(rest)-n) < l {
			return Entry{}, false, bad
		}
		e.RecordID, rest = string(rest[n:n+int(l)]), rest[n+int(l):]
	}
	if len(rest) == 0 {
		return Entry{}, false, bad
	}
	e.TargetURI = string(rest)
	return e, flags&flagConfirmed != 0, nil
}
