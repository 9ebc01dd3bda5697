package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
	"github.com/zkcrawl/zkcrawl/internal/cli"
	"github.com/zkcrawl/zkcrawl/internal/crawlreport"
	"github.com/zkcrawl/zkcrawl/storage/wacz"
)

var packageCommand = &command{
	name:    "package",
	args:    "--out NAME.wacz DIR... | --verify FILE.wacz",
	noCrawl: true,
	about: `Packages a crawl as one WACZ file (WACZ 1.1.1), which ReplayWeb.page opens
as it is. DIR... are the workers' --out folders, copied together however
you like; no ZooKeeper is needed, so a long-finished crawl packages too.
The package holds every finished WARC file (archive/, stored as it is;
*.open files are left out), the merge of their .cdxj indexes
(indexes/index.cdx.gz in blocks of 3,000 records plus indexes/index.idx),
the seeds and HTML pages of the crawl logs with their titles
(pages/pages.jsonl), and datapackage.json with every file's sha256 and
size. --crawl NAME is its title. It is written to NAME.wacz.tmp and
renamed at the end: after an error (a missing folder, a WARC file without
its .cdxj, a full disk) nothing is left at NAME.wacz.

With --verify FILE.wacz it checks a package instead (no --crawl needed):
every file's hash and size, the digest of datapackage.json, and that every
index record points at a gzip member of a file under archive/.`,
	examples: `  crawlctl --crawl docs package --out docs.wacz /data/w1 /data/w2 /data/w3
  crawlctl package --verify docs.wacz`,
	setup: func(fs *pflag.FlagSet) runFunc {
		out := fs.String("out", "", "the package to write, NAME.wacz")
		verify := fs.String("verify", "", "check the package FILE.wacz instead of writing one")
		return func(ctx context.Context, c *ctl, args []string) error {
			if *verify != "" {
				if *out != "" || len(args) > 0 {
					return cli.Usage("package --verify FILE.wacz takes no --out and no folders")
				}
				return c.verifyPackage(ctx, *verify)
			}
			switch {
			case c.g.crawl == "":
				return cli.Usage("package needs --crawl NAME, the package's title (or set %s)", cli.EnvName("crawl"))
			case *out == "":
				return cli.Usage("package needs --out NAME.wacz")
			case len(args) == 0:
				return cli.Usage("package needs the workers' output folders: package --out NAME.wacz DIR...")
			}
			if _, err := coord.Root(c.g.crawl); err != nil {
				return cli.Usage("--crawl: %v", err)
			}
			return c.writePackage(ctx, *out, args)
		}
	},
}

// writePackage writes the WACZ package out from the output folders dirs,
// with the crawl reports of their crawl logs (crawlctl report) as
// reports/crawl-report.txt and reports/crawl-report.json.
func (c *ctl) writePackage(ctx context.Context, out string, dirs []string) error {
	extra, err := c.packageReports(ctx, dirs)
	if err != nil {
		return err
	}
	sum, err := wacz.Write(ctx, wacz.Options{
		Out: out, Dirs: dirs, Title: "zkcrawl crawl " + c.g.crawl,
		Software: "zkcrawl " + cli.Version(), Log: c.log, Extra: extra,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout(), "wrote %s: %d WARC file(s) (%s), %d index records, %d pages; %s in all\n",
		out, sum.WARCs, humanBytes(sum.WARCBytes), sum.IndexLines, sum.Pages, humanBytes(sum.Bytes))
	return nil
}

// verifyPackage checks the WACZ package path.
func (c *ctl) verifyPackage(ctx context.Context, path string) error {
	rep, err := wacz.Verify(ctx, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout(), "%s: ok: %d files match datapackage.json, %d index records point at WARC records, %d pages\n",
		path, rep.Resources, rep.IndexLines, rep.Pages)
	return nil
}

// packageReports returns the crawl reports of dirs' crawl logs as the
// package's reports/ files (text and JSON), or none when no folder holds a
// crawl log (a folder that cannot be read is left to wacz.Write, which
// names it). Errors: a crawl log that cannot be read.
func (c *ctl) packageReports(ctx context.Context, dirs []string) ([]wacz.File, error) {
	var files []string
	for _, d := range dirs {
		if f, err := crawlreport.Find([]string{d}); err == nil {
			files = append(files, f...)
		}
	}
	if len(files) == 0 {
		c.log.Warn("no crawl.log in the folders: the package has no reports/")
		return nil, nil
	}
	r, err := crawlreport.Read(ctx, c.g.crawl, files, c.log)
	if err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	var txt bytes.Buffer
	renderReport(&txt, r)
	return []wacz.File{
		{Name: "reports/crawl-report.txt", Data: txt.Bytes()},
		{Name: "reports/crawl-report.json", Data: append(js, '\n')},
	}, nil
}
