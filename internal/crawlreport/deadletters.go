package crawlreport

// AddZKDeadLetters sets each host row's ZKDeadLetters from byHost (the
// dead letters in ZooKeeper, R/failed, counted by HostOf of their URL):
// every listed row gets a count (0 when byHost has none), and the hosts
// byHost names that have no row are summed into OtherHosts, which is
// created if need be.
func (r *Report) AddZKDeadLetters(byHost map[string]int64) {
	listed := make(map[string]bool, len(r.Hosts))
	for i := range r.Hosts {
		n := byHost[r.Hosts[i].Host]
		r.Hosts[i].ZKDeadLetters = &n
		listed[r.Hosts[i].Host] = true
	}
	var other int64
	for h, n := range byHost {
		if !listed[h] {
			other += n
		}
	}
	if other == 0 && r.OtherHosts == nil {
		return
	}
	if r.OtherHosts == nil {
		r.OtherHosts = &HostRow{Host: OtherKey}
	}
	r.OtherHosts.ZKDeadLetters = &other
}
