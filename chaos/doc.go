// Package chaos proves zkcrawl's fault tolerance end to end: real seeder and
// crawler processes (built from ./cmd with testenv.BuildCommands), real
// ZooKeeper servers (testenv), a synthetic web on loopback whose ground
// truth is known exactly, and faults injected from outside, as they happen
// in production:
//
//   - worker crashes: SIGKILL a crawler mid-crawl, every few seconds, and
//     start a replacement (new id, new output directory);
//   - session expiry while fetching: partition one crawler from ZooKeeper
//     (testenv.Proxy) until the server expires its session;
//   - ZooKeeper failover: kill the ensemble's leader, later a follower, and
//     then two of three servers (quorum loss) for longer than the session
//     timeout, restarting each;
//   - a ZooKeeper outage longer than the client's retry budget, after which
//     the sessions (and their claims) are still alive;
//   - graceful stop: SIGTERM a crawler with items in flight;
//   - politeness across partitions (long only): a one-way partition
//     (testenv.Proxy.HalfOpen: the crawler's packets dropped, the
//     server's delivered) and a SIGSTOP/SIGCONT of the crawler holding a
//     slow host, each for longer than the session timeout, measured at the
//     site: no host ever serves more than per_host_max_in_flight requests
//     at once (testenv.Web.MaxInFlight).
//
// Every test asserts the same end state: the union of all workers' crawl
// logs holds every ground-truth page with its final status and nothing
// else, nothing is left queued, claimed or dead-lettered, and duplicate
// fetches stay within what at-least-once processing allows (for crashes: at
// most the claims the killed workers held). The figures are printed with
// t.Logf (run with -v).
//
// The package holds only tests. `go test ./chaos/` runs the short versions
// (about a minute on two cores, also under -race: the binaries under test
// are normal builds); with ZKCRAWL_CHAOS=long (`make chaos`) the crash test
// runs a bigger crawl with a kill every 3 seconds until the queue is empty,
// and the ZooKeeper failover test keeps servers down longer. Each process's
// output goes to a file in the test's temporary directory; when a test
// fails the tails of those files are printed. With ZKCRAWL_CHAOS_LOGS=DIR
// the process logs are also copied to DIR/<test name>/ for reading later.
package chaos
