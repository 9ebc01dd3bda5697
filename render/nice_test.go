package render

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestNiceBrowser(t *testing.T) {
	if _, err := exec.LookPath("nice"); err != nil {
		t.Skip("no nice(1) on PATH: the browser starts as it is")
	}
	cmd := exec.Command("/usr/bin/chromium", "--headless", "about:blank")
	niceBrowser(cmd)
	got := strings.Join(cmd.Args, " ")
	if !strings.Contains(got, "-n 10 /usr/bin/chromium --headless about:blank") || cmd.Path != cmd.Args[0] {
		t.Fatalf("command %q (path %s): want the browser under nice -n 10, its own arguments after it", got, cmd.Path)
	}
	dropped := strings.HasPrefix(got, cmd.Path+" --bounding-set=-sys_nice --inh-caps=-sys_nice ")
	if want := dropNice() != nil; dropped != want {
		t.Fatalf("command %q: CAP_SYS_NICE dropped %v, want %v (root %v, setpriv usable %v)", got, dropped, want, os.Geteuid() == 0, want)
	}
}
