package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// buildRevision is the VCS revision set by the Makefile with
// -ldflags "-X github.com/zkcrawl/zkcrawl/internal/cli.buildRevision=<rev>",
// for builds where the toolchain stamps none (GOFLAGS=-buildvcs=false, a
// git worktree); a trailing ".dirty" marks a modified work tree.
var buildRevision string

// Version returns the zkcrawl version of this binary, from the build
// information the Go toolchain embeds (runtime/debug.ReadBuildInfo): the
// main module's version ("devel" when built from a checkout), then
// "+<first 12 hex digits of vcs.revision>" and ".dirty" when the work tree
// had changes, e.g. "devel+3f2a1b4c5d6e.dirty" or "v0.2.0". Used for
// --version and the warcinfo "software" field ("zkcrawl/<Version>").
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := strings.TrimSpace(bi.Main.Version)
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	rev, dirty := strings.TrimSuffix(buildRevision, ".dirty"), strings.HasSuffix(buildRevision, ".dirty")
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += "+" + rev[:min(12, len(rev))]
	}
	if dirty {
		v += ".dirty"
	}
	return v
}

// VersionLine is what --version prints: the command, Version, the full VCS
// revision and time when known, and the Go version, on one line.
func VersionLine(command string) string {
	line := command + " (zkcrawl) " + Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, at := strings.TrimSuffix(buildRevision, ".dirty"), ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			}
		}
		if rev != "" {
			line += fmt.Sprintf(" revision %s", rev)
		}
		if at != "" {
			line += " committed " + at
		}
		line += " " + bi.GoVersion
	}
	return line
}
