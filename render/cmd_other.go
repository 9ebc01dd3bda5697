//go:build !linux

package render

import "os/exec"

// browserCmd adjusts the browser's command before it starts: it runs at
// a lower CPU priority (niceBrowser).
func browserCmd(cmd *exec.Cmd) { niceBrowser(cmd) }
