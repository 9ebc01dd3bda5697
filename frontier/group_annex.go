package frontier

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/zkcrawl/zkcrawl/coord"
)

// maxAnnexBytes bounds the annex an owner keeps in a group's cursor
// (Step.Annex), so the cursor, rewritten by every step, stays small next
// to ZooKeeper's 1 MiB znode limit.
const maxAnnexBytes = 256 << 10

// Annex returns the owner's annex as last written (Step.Annex) or loaded,
// nil when the cursor has none (every cursor of format 2). The caller must
// not modify it.
func (gr *Group) Annex() []byte { return gr.st.cur.annex }

// applyDropAnnex applies s.Drop (records marked moved without a ready
// item) and s.Annex to the next cursor s of a step. Errors wrap
// ErrInvalidArgument.
func (next *cursorState) applyDropAnnex(s Step) error {
	for _, r := range s.Drop {
		if err := next.markMoved(r, "drop"); err != nil {
			return err
		}
	}
	if s.Annex != nil {
		if len(s.Annex) > maxAnnexBytes {
			return fmt.Errorf("annex of %d bytes: the limit is %d: %w", len(s.Annex), maxAnnexBytes, coord.ErrInvalidArgument)
		}
		next.annex = slices.Clone(s.Annex)
		if len(next.annex) == 0 {
			next.annex = nil
		}
	}
	return nil
}

// decodeAnnex parses the annex section of a format 3 cursor (uvarint
// length, bytes) at the start of r and returns it and the rest of r.
// Errors wrap errBadEncoding.
func decodeAnnex(r []byte) (annex, rest []byte, err error) {
	n, k := binary.Uvarint(r)
	if k <= 0 || n > uint64(len(r)-k) || n > maxAnnexBytes {
		return nil, r, fmt.Errorf("%w: cursor annex length", errBadEncoding)
	}
	return slices.Clone(r[k : k+int(n)]), r[k+int(n):], nil
}
