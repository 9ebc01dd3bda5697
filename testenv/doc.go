// Package testenv starts real parts for tests, benchmarks and demos of
// zkcrawl: Apache ZooKeeper servers and a synthetic web, all on loopback.
//
// # ZooKeeper
//
// StartZooKeeper runs one standalone server and StartEnsemble an n-node
// quorum, both from the ZooKeeper installed by Debian
// (/usr/share/java/zookeeper.jar, run as
// org.apache.zookeeper.server.quorum.QuorumPeerMain with a generated
// zoo.cfg). No fake: the client talks to the real server over TCP. Each JVM
// runs in its own process group, has stdout and stderr captured to a log file
// (with the slf4j-simple binding added to the class path when installed, so
// ZooKeeper's own log lines appear there), and is killed with SIGKILL if the
// Go process that started it dies (Linux parent-death signal).
//
// Readiness follows the ZooKeeper Administrator's Guide "four letter words":
// a server is ready when `ruok` answers `imok` and `srvr` shows a "Mode:"
// line (for an ensemble: every running member is leader or follower and one
// is leader).
//
// In tests use the wrappers ZooKeeper and NewEnsemble, which fail the test
// with the server log tail and register cleanup with t.Cleanup.
//
// # Redis
//
// StartRedis (in tests RedisServer) runs Debian's redis-server in the
// foreground on a free loopback port, with its own directory and no
// persistence, for the digest index of package dedup.
//
// # Partitions
//
// Proxy is a loopback TCP proxy placed between a client and a server. Its
// Blackhole stops bytes in both directions while keeping connections open
// (a network partition as seen by TCP), Heal lifts it, and CutAll closes every
// connection (a brief connection loss). ExpireSession blackholes long enough
// for the server to expire the client's session, which is how ZooKeeper
// sessions expire in production: from outside the client.
package testenv
