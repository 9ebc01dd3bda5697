package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Crawl-log status codes for fetches that produced no HTTP status. They are
// the negative codes of Heritrix 3's crawl.log
// (org.archive.modules.fetcher.FetchStatusCodes), with the same numbers and
// meanings, so crawl logs from zkcrawl read like Heritrix's. A fetch that got
// an HTTP response logs the HTTP status instead (200, 404, 503, ...).
const (
	// CodeDNSFailed (-1, Heritrix S_DOMAIN_UNRESOLVABLE): the host name did
	// not resolve (NXDOMAIN, no addresses, resolver failure).
	CodeDNSFailed = -1
	// CodeConnectFailed (-2, Heritrix S_CONNECT_FAILED): no connection could
	// be established: connection refused, host or network unreachable, or
	// the TLS handshake failed (bad or untrusted certificate, protocol
	// mismatch). Heritrix has no separate TLS code; a failed handshake means
	// the connection was never usable, so it is a connect failure here.
	CodeConnectFailed = -2
	// CodeConnectLost (-3, Heritrix S_CONNECT_LOST): the connection was
	// established but broke before the response was complete: reset by peer,
	// closed mid-headers or mid-body (fewer bytes than Content-Length, or a
	// broken chunked encoding).
	CodeConnectLost = -3
	// CodeTimeout (-4, Heritrix S_TIMEOUT): Options.Timeout or the caller's
	// context deadline passed before the response (headers and body) was
	// complete.
	CodeTimeout = -4
	// CodeRuntimeError (-5, Heritrix S_RUNTIME_EXCEPTION): any other failure,
	// e.g. a malformed HTTP response the client cannot parse.
	CodeRuntimeError = -5
	// CodeUnfetchableURI (-7, Heritrix S_UNFETCHABLE_URI): the URL is not
	// valid or its scheme is not http or https; nothing was sent.
	CodeUnfetchableURI = -7
	// CodeTooManyRetries (-8, Heritrix S_TOO_MANY_RETRIES): not produced by
	// this package; for callers that give up after the last retry.
	CodeTooManyRetries = -8
	// CodeRobotsPrerequisiteFailed (-61, Heritrix
	// S_ROBOTS_PREREQUISITE_FAILURE): robots.txt for the URL's origin could
	// not be fetched (5xx, 429, network failure), so RFC 9309 section
	// 2.3.1.4 requires assuming complete disallow until it can be fetched.
	CodeRobotsPrerequisiteFailed = -61
	// CodeBlockedByUser (-5001, Heritrix S_BLOCKED_BY_USER): the SSRF guard
	// refused to connect because the resolved address is loopback, private,
	// link-local, CGNAT, multicast or otherwise not public, and
	// Options.AllowPrivateNetworks is false. Nothing was sent.
	CodeBlockedByUser = -5001
	// CodeMIMERejected (-5002, Heritrix S_BLOCKED_BY_CUSTOM_PROCESSOR):
	// the response's media type is refused by the crawl's content rules
	// (accept_mime, reject_mime: ContentRules), judged on its header; the
	// body was not read and the connection was closed. Heritrix logs such
	// a midfetch abort as the HTTP status with annotation "midFetchAbort";
	// zkcrawl's crawl log has no annotations, so it logs this code and
	// puts the HTTP status in the reason (RejectedError).
	CodeMIMERejected = -5002
	// CodeCanceled (-7000, Heritrix S_PROCESSING_THREAD_KILLED): the caller's
	// context was cancelled (worker shutdown, session expiry) before the
	// fetch finished. The URL itself is not at fault.
	CodeCanceled = -7000
	// CodeRobotsPrecluded (-9998, Heritrix S_ROBOTS_PRECLUDED): robots.txt
	// disallows the URL for our user agent. Not returned by Fetch; callers
	// log it when Robots.Allowed reports false.
	CodeRobotsPrecluded = -9998
)

// Error is the error returned by Fetcher.Fetch and Robots.Allowed. Code
// is one of the negative Code* constants above (Heritrix crawl.log
// conventions); URL is the URL that was being fetched; Err is the cause
// (a *net.DNSError, *net.OpError, ErrBlockedAddress, context error, ...),
// reachable with errors.Is / errors.As.
type Error struct {
	Code int
	URL  string
	Err  error
}

// Error formats the error as "fetch <url>: <code name> (<code>): <cause>".
func (e *Error) Error() string {
	return fmt.Sprintf("fetch %s: %s (%d): %v", e.URL, CodeName(e.Code), e.Code, e.Err)
}

// Unwrap returns the cause so errors.Is and errors.As see through an Error.
func (e *Error) Unwrap() error { return e.Err }

// MaxReasonBytes bounds the text Reason returns.
const MaxReasonBytes = 512

// Reason returns err's text for a crawl-log line or a dead letter, which
// record the URL beside it, so the text need not repeat it: a *Error
// anywhere in err's chain gives "<code name> (<code>): <cause>", with the
// cause's "<op> \"<url>\": " prefix (a *url.Error, as net/http returns) taken
// off and any remaining copy of the URL written "<url>"; any other error
// gives its Error(). A hostile URL of 2,000 characters used to appear twice
// in every such line. The text is at most MaxReasonBytes bytes (cut at a
// rune boundary, "..." appended); nil gives "".
func Reason(err error) string {
	if err == nil {
		return ""
	}
	var s string
	var fe *Error
	if !errors.As(err, &fe) {
		s = err.Error()
	} else {
		cause := fe.Err
		var ue *url.Error
		if errors.As(cause, &ue) && ue.Err != nil {
			cause = ue.Err
		}
		s = fmt.Sprintf("%s (%d): %v", CodeName(fe.Code), fe.Code, cause)
		if fe.URL != "" {
			s = strings.ReplaceAll(s, fe.URL, "<url>")
		}
	}
	if len(s) > MaxReasonBytes {
		cut := MaxReasonBytes - 3
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// Code returns the crawl-log status code for err: 0 for nil, the Code of a
// *Error anywhere in err's chain, CodeTimeout for
// context.DeadlineExceeded, CodeCanceled for context.Canceled and
// CodeRuntimeError for anything else.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	}
	return CodeRuntimeError
}

// CodeName returns a short lower-case name for a crawl-log status code
// ("dns-failed", "connect-failed", ..., "http-503"), for logs and metrics.
func CodeName(code int) string {
	switch code {
	case CodeDNSFailed:
		return "dns-failed"
	case CodeConnectFailed:
		return "connect-failed"
	case CodeConnectLost:
		return "connect-lost"
	case CodeTimeout:
		return "timeout"
	case CodeRuntimeError:
		return "runtime-error"
	case CodeUnfetchableURI:
		return "unfetchable-uri"
	case CodeTooManyRetries:
		return "too-many-retries"
	case CodeRobotsPrerequisiteFailed:
		return "robots-prerequisite-failed"
	case CodeBlockedByUser:
		return "blocked-address"
	case CodeMIMERejected:
		return "mime-rejected"
	case CodeCanceled:
		return "canceled"
	case CodeRobotsPrecluded:
		return "robots-precluded"
	}
	if code > 0 {
		return fmt.Sprintf("http-%d", code)
	}
	return fmt.Sprintf("code%d", code)
}

// Retryable reports whether a URL whose fetch ended with crawl-log status
// code should be queued again (with back-off, up to the caller's attempt
// limit):
//
//   - true:  HTTP 5xx, 429 Too Many Requests, 408 Request Timeout (RFC 9110
//     section 15.5.9: the client may repeat the request);
//     CodeDNSFailed (resolver failures are often transient and Go cannot
//     always tell NXDOMAIN from SERVFAIL; Heritrix retries -1 too),
//     CodeConnectFailed, CodeConnectLost, CodeTimeout,
//     CodeRobotsPrerequisiteFailed (robots.txt may become fetchable),
//     CodeCanceled (the worker stopped; nothing is wrong with the URL).
//   - false: every other code: 1xx-4xx (a redirect or a client error is a
//     final answer), CodeRuntimeError, CodeUnfetchableURI,
//     CodeBlockedByUser, CodeMIMERejected, CodeRobotsPrecluded,
//     CodeTooManyRetries.
func Retryable(code int) bool {
	switch {
	case code >= 500 && code <= 599:
		return true
	case code == 429 || code == 408:
		return true
	}
	switch code {
	case CodeDNSFailed, CodeConnectFailed, CodeConnectLost, CodeTimeout,
		CodeRobotsPrerequisiteFailed, CodeCanceled:
		return true
	}
	return false
}

// phase tells classify whether an error happened before the response headers
// were received (dial, TLS, request write, header read) or while reading the
// body; a reset is a connect failure in neither case but a lost connection
// once bytes have flowed.
type phase int

const (
	phaseRoundTrip phase = iota
	phaseBody
)

// classify maps a client error to a crawl-log code. parent is the caller's
// context and reqCtx the per-fetch context carrying Options.Timeout, so a
// deadline can be told apart from a cancellation.
func classify(parent, reqCtx context.Context, err error, ph phase) int {
	if errors.Is(err, ErrBlockedAddress) {
		return CodeBlockedByUser
	}
	if parent.Err() == context.Canceled {
		return CodeCanceled
	}
	if reqCtx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		return CodeTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return CodeTimeout
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return CodeDNSFailed
	}
	if ph == phaseBody {
		// Whatever broke while the body was streaming: the connection was up
		// and then lost.
		return CodeConnectLost
	}
	if isTLSError(err) {
		return CodeConnectFailed
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return CodeConnectFailed
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) {
		return CodeConnectFailed
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNABORTED) {
		return CodeConnectLost
	}
	return CodeRuntimeError
}

// isTLSError reports whether err comes from a failed TLS handshake or
// certificate verification.
func isTLSError(err error) bool {
	var (
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		verErr   *tls.CertificateVerificationError
		unkErr   x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invErr   x509.CertificateInvalidError
	)
	return errors.As(err, &recErr) || errors.As(err, &alertErr) || errors.As(err, &verErr) ||
		errors.As(err, &unkErr) || errors.As(err, &hostErr) || errors.As(err, &invErr)
}
