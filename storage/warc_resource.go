package storage

import (
	"fmt"
	"strings"
	"time"
)

// Resource is a resource record's content (WARC 1.1 section 6.6): a
// payload that no HTTP exchange carried, such as a screenshot of a
// rendered page.
type Resource struct {
	// TargetURI names the resource (WARC-Target-URI); required, no
	// whitespace or control characters. A page screenshot is
	// "urn:screenshot:" + the page's URL, as browsertrix-crawler names it.
	TargetURI string
	// Date is when it was made (WARC-Date); zero means now.
	Date time.Time
	// ContentType is the block's media type, e.g. "image/png"; required.
	ContentType string
	// ConcurrentTo is the WARC-Record-ID of the record it belongs with
	// (WARC-Concurrent-To, section 5.7), e.g. the page's response; "" for
	// none.
	ConcurrentTo string
	// Block is the payload, stored as is.
	Block []byte
}

// WriteResource appends r as a resource record to the current file
// (opening one first when none is open) and returns where it went
// (ResponseInfo, with Profile empty; its PayloadDigest is the block's
// digest), and adds its line to the file's CDXJ index as warcio.js
// indexes a resource record (the media type, no status). Errors wrap ErrBadExchange
// for invalid input (nothing written), ErrClosed after Close, or the I/O
// error (the file is cut back to its last complete record).
func (w *Writer) WriteResource(r Resource) (ResponseInfo, error) {
	if r.TargetURI == "" || strings.ContainsFunc(r.TargetURI, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return ResponseInfo{}, fmt.Errorf("%w: resource target URI %q is empty or holds whitespace or control characters", ErrBadExchange, r.TargetURI)
	}
	if r.ContentType == "" || strings.ContainsAny(r.ContentType, "\r\n") {
		return ResponseInfo{}, fmt.Errorf("%w: resource %s: content type %q is empty or spans lines", ErrBadExchange, r.TargetURI, r.ContentType)
	}
	date := r.Date
	if date.IsZero() {
		date = time.Now()
	}
	id, digest := newRecordID(), blockDigest(r.Block)
	rec := &record{block: [][]byte{r.Block}}
	rec.add("WARC-Type", TypeResource)
	rec.add("WARC-Record-ID", id)
	rec.add("WARC-Date", formatDate(date))
	rec.add("WARC-Target-URI", r.TargetURI)
	if r.ConcurrentTo != "" {
		rec.add("WARC-Concurrent-To", r.ConcurrentTo)
	}
	rec.add("WARC-Warcinfo-ID", "")
	rec.add("Content-Type", r.ContentType)
	rec.add("WARC-Block-Digest", digest)
	rec.add("WARC-Payload-Digest", digest)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ResponseInfo{}, fmt.Errorf("write WARC resource record for %q: %w", r.TargetURI, ErrClosed)
	}
	if w.cur == nil {
		if err := w.open(); err != nil {
			return ResponseInfo{}, err
		}
	}
	rec.set("WARC-Warcinfo-ID", w.cur.warcinfoID)
	start := w.cur.cw.n
	if err := w.writeRecord(rec); err != nil {
		return ResponseInfo{}, w.abandon(start, fmt.Errorf("write WARC resource record for %q to %s: %w", r.TargetURI, w.cur.name, err))
	}
	info := ResponseInfo{File: w.cur.name, Offset: start, Length: w.cur.cw.n - start, RecordID: id, PayloadDigest: digest}
	cdx := resourceCDXJ(r.TargetURI, formatDate(date), r.ContentType, digest)
	if err := w.cur.index.add(cdx.line(TypeResource, info.Offset, info.Length, info.File)); err != nil {
		w.log.Error("CDXJ index of WARC file abandoned: rebuild it with `warcio cdx-index`", "file", w.cur.name, "err", err)
	}
	if w.cur.cw.n >= w.opts.MaxFileBytes {
		if err := w.closeFile(); err != nil {
			return info, err
		}
	}
	return info, nil
}

// resourceCDXJ is the CDXJ entry of a resource record: warcio.js gives it
// the record's Content-Type (cut at ';') as mime and no status.
func resourceCDXJ(target, date, contentType, payloadDigest string) cdxjEntry {
	e := newCDXJEntry(target, date, nil, payloadDigest)
	e.noStatus = true
	e.mime, _, _ = strings.Cut(contentType, ";")
	e.mime = strings.TrimSpace(e.mime)
	e.hasMime = e.mime != ""
	return e
}
