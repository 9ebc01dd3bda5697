package fetch

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress is the cause of a fetch refused by the SSRF guard: the
// address the host name resolved to is not a public unicast address and
// Options.AllowPrivateNetworks is false. Fetch reports it as a *Error
// with Code CodeBlockedByUser; test with errors.Is(err, ErrBlockedAddress).
var ErrBlockedAddress = errors.New("address not allowed (not a public unicast address; set the crawl config key allow_private_networks=true to crawl such addresses)")

// blockedPrefix is one address range the SSRF guard refuses, with the reason
// given in errors.
type blockedPrefix struct {
	prefix netip.Prefix
	reason string
}

// blockedPrefixes lists the ranges refused besides those netip.Addr's own
// predicates (IsLoopback, IsPrivate, ...) already cover. Sources: IANA IPv4
// and IPv6 Special-Purpose Address Registries (RFC 6890), RFC 6598 (CGNAT),
// RFC 1122 section 3.2.1.3 ("this network", which Linux routes to the local
// host), RFC 3879 (deprecated site-local).
var blockedPrefixes = []blockedPrefix{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network (0.0.0.0/8, reaches the local host on Linux)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT (RFC 6598)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (RFC 6890)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (RFC 1112), incl. broadcast"},
	{netip.MustParsePrefix("fec0::/10"), "deprecated site-local (RFC 3879)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 (deprecated, RFC 4291)"},
	// The local-use NAT64 prefix's translator and embedded IPv4 layout are
	// the site's own (RFC 8215 section 3), so the whole range is refused.
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)"},
}

// nat64Prefix is the well-known NAT64 prefix (RFC 6052); an address in it
// reaches the IPv4 address in its last 32 bits, which is checked in turn.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

// BlockedAddr reports whether the SSRF guard refuses to connect to ip when
// private networks are not allowed, and why. Refused: unspecified (0.0.0.0,
// ::), loopback (127/8, ::1), private (RFC 1918 10/8, 172.16/12, 192.168/16;
// RFC 4193 fc00::/7), link-local unicast (169.254/16 incl. the cloud metadata
// address 169.254.169.254, fe80::/10), multicast, CGNAT 100.64/10, 0/8, and
// the other special-purpose ranges in blockedPrefixes. IPv4-mapped IPv6
// (::ffff:a.b.c.d) and NAT64 (64:ff9b::/96) addresses are judged by the IPv4
// address they carry; the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) is
// refused whole. An invalid ip is refused.
func BlockedAddr(ip netip.Addr) (blocked bool, reason string) {
	if !ip.IsValid() {
		return true, "invalid address"
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() && nat64Prefix.Contains(ip) {
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if blocked, reason := BlockedAddr(v4); blocked {
			return true, "NAT64 of " + reason
		}
		return false, ""
	}
	switch {
	case ip.IsUnspecified():
		return true, "unspecified"
	case ip.IsLoopback():
		return true, "loopback"
	case ip.IsPrivate():
		return true, "private"
	case ip.IsLinkLocalUnicast():
		return true, "link-local (incl. cloud metadata 169.254.169.254)"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return true, "multicast"
	}
	for _, bp := range blockedPrefixes {
		if bp.prefix.Contains(ip) {
			return true, bp.reason
		}
	}
	return false, ""
}

// ssrfControl returns a net.Dialer.Control function that refuses blocked
// addresses. It runs after name resolution, on the exact address about to be
// connected (for every address tried, including Happy Eyeballs fallbacks), so
// DNS rebinding or a name such as "localhost" cannot slip past a check done
// on the name. allowPrivate is read at every dial so Fetcher.SetOptions
// applies to new connections at once.
func ssrfControl(allowPrivate func() bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate() {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			// Fail closed: an address we cannot parse is not dialled.
			return fmt.Errorf("%w: cannot parse dial address %q: %v", ErrBlockedAddress, address, err)
		}
		if blocked, reason := BlockedAddr(ap.Addr()); blocked {
			return fmt.Errorf("%w: %s is %s", ErrBlockedAddress, ap.Addr(), reason)
		}
		return nil
	}
}
