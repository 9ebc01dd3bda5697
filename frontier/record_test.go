package frontier

import (
	"errors"
	"testing"
)

func TestRecordRoundTripAndRejects(t *testing.T) {
	it := Item{URL: "http://example.com/a?b=1", Depth: 3, Via: "http://example.com/", Attempts: 1}
	rec, err := it.Record()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRecord(rec)
	if err != nil || back != it {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	p := 0.8
	full := Item{URL: "http://example.com/s", Depth: 1, Via: "http://example.com/sitemap.xml", Hops: "ML", Lastmod: "2026-11-01", Priority: &p}
	rec2, err := full.Record()
	if err != nil {
		t.Fatal(err)
	}
	back2, err := DecodeRecord(rec2)
	if err != nil || back2.Hops != "ML" || back2.Lastmod != "2026-11-01" || back2.Priority == nil || *back2.Priority != 0.8 {
		t.Fatalf("round trip with sitemap fields: %+v, %v", back2, err)
	}
	if RecordKey(rec) != Fingerprint(it.URL) {
		t.Fatal("RecordKey differs from Fingerprint of the URL")
	}
	for _, bad := range [][]byte{nil, {0}, append(rec, 0), rec[:len(rec)-1], {0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if _, err := DecodeRecord(bad); !errors.Is(err, ErrBadItem) {
			t.Errorf("DecodeRecord(%q) = %v, want ErrBadItem", bad, err)
		}
	}
	if _, err := (Item{}).Record(); !errors.Is(err, ErrBadItem) {
		t.Errorf("empty item encoded: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	rec, _ := Item{URL: "http://a/", Via: "http://b/", Depth: 1}.Record()
	f.Add(rec)
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := DecodeRecord(data)
		if err != nil {
			return
		}
		if RecordKey(data) != Fingerprint(it.URL) {
			t.Fatalf("RecordKey of a valid record differs from Fingerprint of its URL")
		}
		if u, err := RecordURL(data); err != nil || u != it.URL {
			t.Fatalf("RecordURL = %q, %v; want %q", u, err, it.URL)
		}
		again, err := it.Record()
		if err != nil {
			t.Fatalf("decoded item does not encode: %v", err)
		}
		if back, err := DecodeRecord(again); err != nil || back.URL != it.URL || back.Hops != it.Hops || back.Lastmod != it.Lastmod || back.Depth != it.Depth {
			t.Fatalf("re-encoding changed the item: %+v -> %+v (%v)", it, back, err)
		}
	})
}
