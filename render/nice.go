package render

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// browserNice is the niceness the browser and its renderers run at
// (nice(1); they inherit it). A render is background work that may take
// every core it is given, while the worker beside it keeps time: its
// politeness intervals count from when a request is written, its
// ZooKeeper session needs its pings answered.
//
// Chromium sets its threads' priorities itself (its display-critical
// threads at nice -8, the others at 0) wherever it may, and a root process
// may: measured on 2 cores, a page's subrequests then reached the server
// up to 576 ms after the worker wrote them, so two requests the worker
// spaced 250 ms apart arrived 3 ms apart. So a root worker also takes
// CAP_SYS_NICE from the browser (setpriv(1), util-linux), which then
// cannot raise a thread above browserNice.
const browserNice = 10

// niceBrowser makes cmd start the browser through nice(1) at browserNice
// (and, in a root process, through setpriv(1) without CAP_SYS_NICE), when
// they are on PATH (coreutils, util-linux); otherwise cmd is left as it
// is. Both exec the browser, so the process keeps its pid.
func niceBrowser(cmd *exec.Cmd) {
	nice, err := exec.LookPath("nice")
	if err != nil {
		return
	}
	prefix := []string{nice, "-n", strconv.Itoa(browserNice)}
	if drop := dropNice(); drop != nil {
		prefix = append(drop, prefix...)
	}
	cmd.Args = append(append(prefix, cmd.Path), cmd.Args[1:]...)
	cmd.Path = prefix[0]
}

// dropNice returns the setpriv(1) command prefix that starts a program
// without CAP_SYS_NICE, in a root process where setpriv is on PATH and
// works here (a container may refuse the capability change: setpriv is
// tried once, on true(1)); nil otherwise (the browser then starts under
// nice alone).
var dropNice = sync.OnceValue(func() []string {
	if os.Geteuid() != 0 {
		return nil
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return nil
	}
	prefix := []string{setpriv, "--bounding-set=-sys_nice", "--inh-caps=-sys_nice"}
	if err := exec.Command(prefix[0], append(prefix[1:], "true")...).Run(); err != nil {
		return nil
	}
	return prefix
})
