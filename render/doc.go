// Package render drives a headless Chromium (github.com/chromedp/chromedp)
// to capture pages that exist only after JavaScript has run, with every
// request the browser makes answered by the caller.
//
// Contract. Pool.Render opens one page in a fresh incognito browser context
// (its own cookies, storage and cache, disposed afterwards) and intercepts
// every request of it with the DevTools Fetch domain (Fetch.enable with the
// pattern "*" at the request stage). The page's own main document is
// answered from the Response the caller already holds (no second fetch);
// every other request goes to the caller's Fetcher, and its Response is
// given to the browser with Fetch.fulfillRequest, its error with
// Fetch.failRequest. Nothing leaves the browser on its own: Chromium runs
// with a proxy that refuses every connection and a host resolver that
// resolves no name, so what the interception does not see (WebSocket
// handshakes, a service worker's own fetches, prefetches) fails;
// WebSocket, EventSource and ping requests that reach the interception are
// failed without asking the caller; service worker registration is
// refused inside the page; no GPU is used.
//
// Behaviours, in order: load the document (the load event), wait for
// network idle (no request in flight and none started for Options.IdleQuiet,
// at most Options.IdleMax), scroll to the bottom one viewport at a time to
// trigger lazy content, and at the bottom wait for idle and scroll on if
// what arrived made the page longer (at most Options.MaxScrolls steps in
// all), wait for idle again, then read the rendered DOM (document.documentElement.outerHTML),
// the links of the rendered DOM (a[href], area[href], absolute), the URLs
// the page moved to with history.pushState, history.replaceState or a
// main-frame navigation (answered with 204 so the page stays; they count
// as pages to queue) and, if asked, a PNG screenshot of the viewport.
//
// Bounds. At most Options.Concurrency pages render at once; while the
// browser's memory (the resident set of its whole process tree, from /proc)
// exceeds Options.MemoryMB, only one does, and an idle browser over the
// budget is restarted. A page's whole render, its callbacks included, is
// bounded by Options.Timeout. A render that times out (a page whose
// script never yields) or whose browser dies (a crash, an OOM kill) kills
// the browser's process tree and returns an error; the next Render starts
// a fresh browser. Other pages rendering in the killed browser at that
// moment fail too: a render error means "try the page again", nothing of
// it is kept.
//
// render knows nothing of the crawl: the Fetcher decides what may be
// fetched, how politely, and what is stored.
package render
