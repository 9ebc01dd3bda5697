// Package fetch is zkcrawl's HTTP layer: one GET per call with redirects
// returned as data (client.go, result.go; HTTP/2 over TLS by ALPN, h2.go),
// crawl-log status codes for failures (codes.go), an SSRF guard at dial
// time (ssrf.go), robots.txt per RFC 9309 (robots.go), per-host politeness
// (politeness.go) and link extraction from HTML (links.go). It imports no other zkcrawl package.
package fetch
