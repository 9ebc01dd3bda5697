package testenv

// Crawler-trap handlers for frontier quota tests and the benchmark: every
// page links to many new, unique, long URLs, each of which is another such
// page, for ever. Handlers only: serve them with any http.Server on
// loopback.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// TrapFlavour selects the kind of URLs a trap page links to.
type TrapFlavour string

// The trap flavours: what a quota must bound (docs/design.md, "Quotas").
const (
	// TrapRepetitive links to long, highly repetitive paths on the trap's
	// own host ("/t/<page>-<i>/abcdefghij/abcdefghij/..."): they compress
	// well, so only the per-host URL count quota bounds them.
	TrapRepetitive TrapFlavour = "repetitive"
	// TrapRandom links to paths of random hex digits on the trap's own
	// host: incompressible for flate beyond hex's 4 bits per character, so
	// the byte budget must bound them. (Hex, not a denser alphabet: 10,000
	// links of ~1,900 characters must stay under the crawler's default
	// 10 MiB body cap once gzipped, or no link would be read at all.)
	TrapRandom TrapFlavour = "random"
	// TrapSubdomain gives every link a new host: an IPv4 loopback literal
	// 127.a.b.c with the trap's port, which nothing serves (connection
	// refused), so each link is a new host key (a new per-host quota) and
	// fetching it never leaves the machine. Names such as
	// x<random>.trap.invalid would be looked up in DNS, i.e. sent to the
	// machine's resolver, which a loopback-only test must not do.
	TrapSubdomain TrapFlavour = "subdomain"
)

// TrapFlavours lists every flavour, in the order the benchmark runs them.
var TrapFlavours = []TrapFlavour{TrapRepetitive, TrapRandom, TrapSubdomain}

// Defaults of TrapConfig.
const (
	// TrapDefaultLinks is the number of links per trap page.
	TrapDefaultLinks = 10_000
	// TrapDefaultURLLength is the approximate length, in characters, of
	// each linked absolute URL.
	TrapDefaultURLLength = 1900
)

// TrapConfig configures NewTrapHandler. Zero fields take the defaults.
type TrapConfig struct {
	// Flavour is the kind of links (default TrapRepetitive).
	Flavour TrapFlavour
	// Links is the number of links per page (default TrapDefaultLinks,
	// 1..100,000).
	Links int
	// URLLength is the approximate length of each absolute link URL in
	// characters (default TrapDefaultURLLength, 64..8,000).
	URLLength int
	// Port is the trap server's port, used to build TrapSubdomain hosts
	// (127.a.b.c:Port) and to size the other flavours' paths. Required.
	Port int
}

// NewTrapHandler returns the handler of a crawler trap: /robots.txt
// answers 404 (crawl everything, RFC 9309 section 2.3.1.3); every other
// path answers 200 text/html, gzip-encoded when the request accepts gzip
// (compress/gzip, BestSpeed), with cfg.Links links to new unique URLs
// derived from the request path (the same path always yields the same
// links, and no two pages share one). Errors: a config field out of range,
// naming it.
func NewTrapHandler(cfg TrapConfig) (http.Handler, error) {
	if cfg.Flavour == "" {
		cfg.Flavour = TrapRepetitive
	}
	if cfg.Links == 0 {
		cfg.Links = TrapDefaultLinks
	}
	if cfg.URLLength == 0 {
		cfg.URLLength = TrapDefaultURLLength
	}
	switch {
	case cfg.Flavour != TrapRepetitive && cfg.Flavour != TrapRandom && cfg.Flavour != TrapSubdomain:
		return nil, fmt.Errorf("%w: trap Flavour %q: want %s, %s or %s", ErrWebConfig, cfg.Flavour, TrapRepetitive, TrapRandom, TrapSubdomain)
	case cfg.Links < 1 || cfg.Links > 100_000:
		return nil, fmt.Errorf("%w: trap Links %d: want 1..100000", ErrWebConfig, cfg.Links)
	case cfg.URLLength < 64 || cfg.URLLength > 8000:
		return nil, fmt.Errorf("%w: trap URLLength %d: want 64..8000", ErrWebConfig, cfg.URLLength)
	case cfg.Port < 1 || cfg.Port > 65535:
		return nil, fmt.Errorf("%w: trap Port %d: want 1..65535", ErrWebConfig, cfg.Port)
	}
	return &trapHandler{cfg: cfg}, nil
}

type trapHandler struct{ cfg TrapConfig }

func (h *trapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	page := h.page(r.URL.Path)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
		return
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // error only for a bad level
	_, _ = zw.Write(page)
	_ = zw.Close()
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// page renders the HTML of the trap page at path.
func (h *trapHandler) page(path string) []byte {
	f := fnv.New64a()
	f.Write([]byte(path))
	id := f.Sum64()
	rng := rand.New(rand.NewPCG(id, uint64(h.cfg.Links)))
	// "http://127.0.0.1:PORT" is the prefix of a same-host link.
	prefix := len("http://127.0.0.1:") + len(strconv.Itoa(h.cfg.Port))
	var b bytes.Buffer
	b.Grow(h.cfg.Links * (h.cfg.URLLength + 24))
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><title>trap %x</title></head><body>\n", id)
	const hex = "0123456789abcdef"
	const rep = "abcdefghij/"
	for i := 0; i < h.cfg.Links; i++ {
		b.WriteString(`<a href="`)
		switch h.cfg.Flavour {
		case TrapRepetitive:
			head := fmt.Sprintf("/t/%x-%d/", id, i)
			b.WriteString(head)
			b.WriteString(repeatTo(rep, h.cfg.URLLength-prefix-len(head)))
		case TrapRandom:
			head := "/r/"
			b.WriteString(head)
			for n := h.cfg.URLLength - prefix - len(head); n > 0; n-- {
				b.WriteByte(hex[rng.IntN(16)])
			}
		case TrapSubdomain:
			// 127.0.0.0/8 minus 127.0.0.0 and 127.0.0.1 (the trap itself).
			a := 2 + rng.Uint32N(1<<24-2)
			host := fmt.Sprintf("http://127.%d.%d.%d:%d", a>>16, a>>8&0xff, a&0xff, h.cfg.Port)
			head := fmt.Sprintf("/s/%x-%d/", id, i)
			b.WriteString(host + head)
			b.WriteString(repeatTo(rep, h.cfg.URLLength-len(host)-len(head)))
		}
		b.WriteString("\">link</a>\n")
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// repeatTo returns s repeated and cut to n bytes (n <= 0: "").
func repeatTo(s string, n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(s, n/len(s)+1)[:n]
}
