package worker

import "github.com/zkcrawl/zkcrawl/fetch"

// protocolsOf returns the WARC-Protocol values of res, the HTTP version
// then the TLS version when there is one: ["h2", "tls/1.3"],
// ["http/1.1", "tls/1.2"], ["http/1.1"] for plain http; nil when the
// fetcher did not say (a test double's Result).
func protocolsOf(res *fetch.Result) []string {
	if res.Protocol == "" {
		return nil
	}
	if res.TLS == "" {
		return []string{res.Protocol}
	}
	return []string{res.Protocol, res.TLS}
}

// logProtocol returns the crawl log's protocol of res
// (storage.LogEntry.Protocol): "h2" over HTTP/2, else "".
func logProtocol(res *fetch.Result) string {
	if res.Protocol == fetch.ProtoHTTP2 {
		return res.Protocol
	}
	return ""
}
