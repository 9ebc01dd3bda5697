// Package readme holds no code: its test keeps README.md true to the
// binaries (each command's --help block, the metrics table, the states
// crawlctl status shows). Run 'go test ./internal/readme -update' to rewrite
// the README's help blocks from the binaries after changing a flag.
package readme
