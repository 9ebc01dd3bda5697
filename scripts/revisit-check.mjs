// scripts/revisit-check.mjs: reads WARC files with warcio.js (an independent
// reader, not zkcrawl's) and checks that every revisit record resolves: its
// WARC-Refers-To-Target-URI and WARC-Refers-To-Date name a response record
// in the given files, and, when it has one, its WARC-Refers-To names that
// record (WARC 1.1 section 6.7). A revisit that refers to another revisit,
// or to nothing in the files, is counted as unresolved.
//
// Usage: node scripts/revisit-check.mjs WARCIO_DIR FILE.warc.gz...
// WARCIO_DIR is the warcio package (tools/warcio/node_modules/warcio).
// Prints one JSON object: responses, revisits (by profile), unresolved,
// and up to 5 examples of unresolved revisits. Exits 1 when any revisit is
// unresolved, 2 on a usage or read error.
import { createReadStream } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, ...files] = process.argv.slice(2);
if (!dir || files.length === 0) {
  console.error("usage: node scripts/revisit-check.mjs WARCIO_DIR FILE.warc.gz...");
  process.exit(2);
}
const { WARCParser } = await import(pathToFileURL(path.join(dir, "dist", "index.js")).href);

// The key of a capture: its target URI and its WARC-Date to the second
// (WARC-Refers-To-Date may carry fewer fraction digits than WARC-Date).
const key = (uri, date) => uri + " " + String(date || "").slice(0, 19);

const responses = new Map(); // key -> record ID
const ids = new Set();
const revisits = [];
const byProfile = {};
for (const f of files) {
  try {
    for await (const rec of WARCParser.iterRecords(createReadStream(f))) {
      const h = rec.warcHeaders.headers;
      const type = h.get("WARC-Type");
      if (type === "response") {
        responses.set(key(h.get("WARC-Target-URI"), h.get("WARC-Date")), h.get("WARC-Record-ID"));
        ids.add(h.get("WARC-Record-ID"));
      } else if (type === "revisit") {
        const profile = (h.get("WARC-Profile") || "").replace(/^.*\/revisit\//, "");
        byProfile[profile] = (byProfile[profile] || 0) + 1;
        revisits.push({
          file: path.basename(f),
          uri: h.get("WARC-Target-URI"),
          profile,
          refersTo: h.get("WARC-Refers-To"),
          target: h.get("WARC-Refers-To-Target-URI"),
          date: h.get("WARC-Refers-To-Date"),
        });
      }
      await rec.skipFully();
    }
  } catch (e) {
    console.error(`revisit-check: ${f}: ${e.message}`);
    process.exit(2);
  }
}
const bad = revisits.filter((r) => {
  const id = responses.get(key(r.target, r.date));
  if (!id) return true;
  return r.refersTo && !ids.has(r.refersTo);
});
console.log(JSON.stringify({ responses: responses.size, revisits: revisits.length, by_profile: byProfile,
  unresolved: bad.length, examples: bad.slice(0, 5) }));
process.exit(bad.length ? 1 : 0);
