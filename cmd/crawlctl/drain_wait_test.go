package main

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestWaitPIDsGone: drain --wait only says "exited" once a local worker's
// process is gone, not when its status node vanished: a real child process
// that outlives the check is reported as still running, and is waited for.
func TestWaitPIDsGone(t *testing.T) {
	cmd := exec.Command("sleep", "0.6")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	left := waitPIDsGone(ctx, []int{cmd.Process.Pid})
	cancel()
	if len(left) != 1 {
		t.Fatalf("running process reported gone: left %v", left)
	}
	start := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if left := waitPIDsGone(ctx, []int{cmd.Process.Pid}); len(left) != 0 {
		t.Fatalf("exited process still reported: %v", left)
	}
	<-reaped
	if time.Since(start) < 300*time.Millisecond {
		t.Errorf("returned after %v, before the process could have exited", time.Since(start))
	}
}
