package worker

import (
	"context"
	"errors"
	"net/url"

	"github.com/zkcrawl/zkcrawl/fetch"
	"github.com/zkcrawl/zkcrawl/frontier"
)

// pdfLinks returns the URLs fetch.ExtractPDFLinks finds in the link
// annotations of a complete 2xx PDF response, resolved against its URL: at
// most fetch.DefaultMaxPDFLinks of them, none when the decoded body is
// over fetch.MaxPDFParseBytes or does not parse (a panic of the parser
// included: logged as "pdf not parsed", at warning level for a panic,
// debug level otherwise; never a crash).
func (w *Worker) pdfLinks(ctx context.Context, it frontier.Item, res *fetch.Result) []string {
	base, err := url.Parse(it.URL)
	if err != nil {
		return nil
	}
	body, err := res.DecodedBody(fetch.MaxPDFParseBytes)
	if err != nil {
		w.log.Debug("pdf not parsed", "url", it.URL, "error", err)
		return nil
	}
	links, err := fetch.ExtractPDFLinks(ctx, base, body, 0)
	if errors.Is(err, fetch.ErrPDFPanic) {
		w.log.Warn("pdf not parsed", "url", it.URL, "error", err)
		return nil
	}
	if err != nil {
		w.log.Debug("pdf not parsed", "url", it.URL, "error", err)
		return nil
	}
	return links
}
