package testenv

import (
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

const webHTMLType = "text/html; charset=utf-8"

var (
	webFlakyBody       = []byte("<!DOCTYPE html>\n<html><head><title>Server error</title></head><body><h1>500 try again</h1></body></html>\n")
	webUnavailableBody = []byte("<!DOCTYPE html>\n<html><head><title>Unavailable</title></head><body><h1>503 unavailable</h1></body></html>\n")
)

// webStatusWriter remembers the status sent, for the request log.
type webStatusWriter struct {
	http.ResponseWriter
	status int
}

func (s *webStatusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *webStatusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush passes a flush through to the connection (chunked pages).
func (s *webStatusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// handler serves host h and records every request in the request log.
func (w *Web) handler(h int) http.Handler {
	host := w.hosts[h]
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !w.enter() {
			webWrite(rw, http.StatusServiceUnavailable, webHTMLType, webUnavailableBody)
			return
		}
		defer w.leave()
		defer w.enterHost(h)()
		start := time.Now()
		sw := &webStatusWriter{ResponseWriter: rw}
		target := r.URL.RequestURI()
		switch w.cfg.HostFault[h] {
		case WebFaultReset:
			w.resetConn(rw)
			w.record(WebRequest{Host: host, HostIndex: h, Path: target, Time: start, UserAgent: r.UserAgent()})
			return
		case WebFaultTimeout:
			<-r.Context().Done() // client gone or web closing; never an answer
			w.record(WebRequest{Host: host, HostIndex: h, Path: target, Time: start, UserAgent: r.UserAgent()})
			return
		}
		if d := w.cfg.HostDelay[h] + w.latencyOf(h, target); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				webWrite(sw, http.StatusServiceUnavailable, webHTMLType, webUnavailableBody)
				w.record(WebRequest{Host: host, HostIndex: h, Path: target, Time: start, UserAgent: r.UserAgent(), Status: http.StatusServiceUnavailable})
				return
			}
		}
		w.serve(sw, r, h, target)
		status := sw.status
		if status == 0 {
			status = http.StatusOK // net/http sends 200 for a handler that wrote nothing
		}
		w.record(WebRequest{Host: host, HostIndex: h, Path: target, Time: start, UserAgent: r.UserAgent(), Status: status})
		w.log.LogAttrs(r.Context(), slog.LevelDebug, "synthetic web request", slog.String("host", host),
			slog.String("path", target), slog.Int("status", status), slog.Duration("took", time.Since(start)))
	})
}

// resetConn ends the request's connection with a TCP RST (SO_LINGER 0
// then close) and no answer.
func (w *Web) resetConn(rw http.ResponseWriter) {
	hj, ok := rw.(http.Hijacker)
	if !ok {
		panic("testenv: web handler: ResponseWriter is not a Hijacker")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func webWrite(rw http.ResponseWriter, status int, ctype string, body []byte) {
	hd := rw.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(status)
	_, _ = rw.Write(body) // a client that went away is not our error
}

// webWriteChunked sends body with Transfer-Encoding: chunked, in three
// flushed pieces, and a header whose name is in unusual case.
func webWriteChunked(rw http.ResponseWriter, ctype string, body []byte) {
	hd := rw.Header()
	hd.Set("Content-Type", ctype)
	hd["X-odd-CASE"] = []string{"Yes"}
	rw.WriteHeader(http.StatusOK)
	third := len(body) / 3
	for _, part := range [][]byte{body[:third], body[third : 2*third], body[2*third:]} {
		if _, err := rw.Write(part); err != nil {
			return
		}
		if f, ok := rw.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func (w *Web) serve(rw http.ResponseWriter, r *http.Request, h int, target string) {
	if target == "/robots.txt" {
		st, ok := w.cfg.RobotsStatus[h]
		if !ok {
			st = http.StatusOK
		}
		webWrite(rw, st, "text/plain; charset=utf-8", w.robotsTxt[h])
		return
	}
	rt := w.route(h, target)
	switch rt.kind {
	case webKindRedirect:
		rw.Header().Set("Location", rt.location)
		webWrite(rw, rt.status, webHTMLType, rt.body)
	case webKindError:
		webWrite(rw, rt.status, webHTMLType, rt.body)
	case webKindBlob:
		webWrite(rw, http.StatusOK, rt.contentType, rt.body)
	case webKindLarge:
		w.serveLarge(rw, r)
	case webKindHTML:
		if rt.flaky && w.flakyHits[h].Add(1) == 1 {
			webWrite(rw, http.StatusInternalServerError, webHTMLType, webFlakyBody)
			return
		}
		if rt.slow {
			t := time.NewTimer(w.cfg.SlowDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				webWrite(rw, http.StatusServiceUnavailable, webHTMLType, webUnavailableBody)
				return
			}
		}
		if w.mutates(target) {
			w.serveVersion(rw, r, h, target, rt)
			return
		}
		body := rt.body
		if body == nil {
			body = w.render(rt)
		}
		if rt.xRobotsTag != "" {
			// Set in the map directly: net/http sends the name as written.
			rw.Header()["x-ROBOTS-tag"] = []string{rt.xRobotsTag}
		}
		if rt.chunked {
			webWriteChunked(rw, webHTMLType, body)
			return
		}
		webWrite(rw, http.StatusOK, webHTMLType, body)
	}
}

// serveLarge writes the oversized page in 64 KiB chunks, stopping when the
// request context ends (client gone or web closing).
func (w *Web) serveLarge(rw http.ResponseWriter, r *http.Request) {
	body := w.blobs.large
	hd := rw.Header()
	hd.Set("Content-Type", webHTMLType)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	const chunk = 64 << 10
	for off := 0; off < len(body); off += chunk {
		if r.Context().Err() != nil {
			return
		}
		if _, err := rw.Write(body[off:min(off+chunk, len(body))]); err != nil {
			return
		}
	}
}
