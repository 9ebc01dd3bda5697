package main

import ("time")

type machine struct{ LoadStart, LoadEnd, ZooKeeper string }
type report struct {
	Started, Finished time.Time
	Machine machine
	Command, OutDir string
	Synth *synthResult
	Real *realResult
	Scale *scaleResult
	Takeover *takeoverResult
	Errors []string
}
func machineInfo() machine { return machine{} }
func (r *report) table() string { return "" }
func (r *report) markdown(t string) string { return t }
