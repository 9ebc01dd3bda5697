package render

import (
	"os/exec"
	"syscall"
)

// browserCmd adjusts the browser's command before it starts: it runs at
// a lower CPU priority (niceBrowser) and is killed when the worker dies
// (Pdeathsig, as chromedp's default does).
func browserCmd(cmd *exec.Cmd) {
	niceBrowser(cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
