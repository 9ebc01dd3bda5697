package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// query asks the servers for name's A and AAAA records at once (each query
// tries the servers in order; a truncated UDP answer is asked again over
// TCP) and returns the addresses (following CNAMEs from name), IPv4 first,
// at most dnsMaxAddrs, with the smallest TTL of the records used. Without
// addresses err is a *net.DNSError: IsNotFound for NXDOMAIN or no address
// record (ttl is then the negative TTL of the answer's SOA, RFC 2308
// section 5, or 0), else the failure of the last server tried.
func (r *Resolver) query(ctx context.Context, name string) (addrs []netip.Addr, ttl time.Duration, err *net.DNSError) {
	type answer struct {
		msg *dns.Msg
		err error
	}
	var res [2]answer
	done := make(chan struct{})
	go func() {
		defer close(done)
		res[1].msg, res[1].err = r.exchange(ctx, name, dns.TypeAAAA)
	}()
	res[0].msg, res[0].err = r.exchange(ctx, name, dns.TypeA)
	<-done

	fqdn := dns.Fqdn(name)
	minTTL := uint32(1<<32 - 1)
	nxdomain, nodata := false, 0
	var soaTTL uint32
	var lastErr error
	for _, a := range res {
		if a.err != nil {
			lastErr = a.err
			continue
		}
		switch a.msg.Rcode {
		case dns.RcodeNameError:
			nxdomain = true
		case dns.RcodeSuccess:
		default:
			lastErr = &rcodeError{a.msg.Rcode}
			continue
		}
		found, t := chainAddrs(a.msg, fqdn, &addrs)
		if found {
			minTTL = min(minTTL, t)
		} else if a.msg.Rcode == dns.RcodeSuccess {
			nodata++
		}
		for _, rr := range a.msg.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				soaTTL = min(soa.Hdr.Ttl, soa.Minttl) // RFC 2308 section 5
			}
		}
	}
	if len(addrs) > 0 {
		return orderAddrs(addrs), time.Duration(minTTL) * time.Second, nil
	}
	if nxdomain || nodata == len(res) {
		return nil, time.Duration(soaTTL) * time.Second, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	e := &net.DNSError{Err: "lookup failed", Name: name, IsTemporary: true}
	if lastErr != nil {
		e.Err = lastErr.Error()
		var ne net.Error
		if errors.As(lastErr, &ne) && ne.Timeout() {
			e.IsTimeout = true
		}
	}
	return nil, 0, e
}

// rcodeError is an answer with an rcode that says nothing of the name
// (SERVFAIL, REFUSED, ...).
type rcodeError struct{ rcode int }

func (e *rcodeError) Error() string {
	if s, ok := dns.RcodeToString[e.rcode]; ok {
		return "server answered " + s
	}
	return "server answered rcode " + strconv.Itoa(e.rcode)
}

// exchange asks the servers in order for name's records of qtype and
// returns the first answer that is NOERROR or NXDOMAIN, else the last
// answer or error.
func (r *Resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = true
	m.SetEdns0(1232, false) // the DNS Flag Day 2020 UDP size: no fragmentation
	var last *dns.Msg
	var lastErr error = context.DeadlineExceeded
	for _, server := range r.servers {
		if ctx.Err() != nil {
			break
		}
		in, _, err := r.udp.ExchangeContext(ctx, m, server)
		if err == nil && in.Truncated {
			in, _, err = r.tcp.ExchangeContext(ctx, m, server)
		}
		if err != nil {
			lastErr = err
			continue
		}
		if in.Rcode == dns.RcodeSuccess || in.Rcode == dns.RcodeNameError {
			return in, nil
		}
		last, lastErr = in, nil
	}
	if last != nil {
		return last, nil
	}
	return nil, lastErr
}

// chainAddrs appends to addrs (up to dnsMaxAddrs) the A and AAAA records of
// msg's answer owned by fqdn or by a name its CNAME chain reaches, and
// reports whether it found one and the smallest TTL of those records and
// of the CNAMEs followed.
func chainAddrs(msg *dns.Msg, fqdn string, addrs *[]netip.Addr) (found bool, ttl uint32) {
	ttl = 1<<32 - 1
	names := map[string]bool{strings.ToLower(fqdn): true}
	for range 8 { // CNAME chains longer than 8 are not followed
		grew := false
		for _, rr := range msg.Answer {
			if c, ok := rr.(*dns.CNAME); ok && names[strings.ToLower(c.Hdr.Name)] && !names[strings.ToLower(c.Target)] {
				names[strings.ToLower(c.Target)] = true
				ttl = min(ttl, c.Hdr.Ttl)
				grew = true
			}
		}
		if !grew {
			break
		}
	}
	for _, rr := range msg.Answer {
		var ip netip.Addr
		switch a := rr.(type) {
		case *dns.A:
			ip, _ = netip.AddrFromSlice(a.A.To4())
		case *dns.AAAA:
			ip, _ = netip.AddrFromSlice(a.AAAA)
		default:
			continue
		}
		if !ip.IsValid() || !names[strings.ToLower(rr.Header().Name)] {
			continue
		}
		found = true
		ttl = min(ttl, rr.Header().Ttl)
		if len(*addrs) < dnsMaxAddrs && !slices.Contains(*addrs, ip) {
			*addrs = append(*addrs, ip)
		}
	}
	return found, ttl
}

// orderAddrs returns ips unmapped, IPv4 first (stable otherwise), at most
// dnsMaxAddrs.
func orderAddrs(ips []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, min(len(ips), dnsMaxAddrs))
	for _, want4 := range []bool{true, false} {
		for _, ip := range ips {
			ip = ip.Unmap()
			if ip.Is4() == want4 && len(out) < dnsMaxAddrs && !slices.Contains(out, ip) {
				out = append(out, ip)
			}
		}
	}
	return out
}

// dialFunc returns a DialContext that resolves a host name through r and
// dials its addresses in turn with d (whose Control, the SSRF guard, sees
// each address actually dialled), splitting the deadline among them as
// net.Dialer does (each gets at least dnsMinAttempt); an IP literal is
// dialled directly. The error is the first address's, or the lookup's
// *net.DNSError inside a *net.OpError.
func (r *Resolver) dialFunc(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, address)
		}
		ips, err := r.LookupNetIP(ctx, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		var first error
		for i, ip := range ips {
			actx, cancel := ctx, context.CancelFunc(func() {})
			if dl, ok := ctx.Deadline(); ok && i < len(ips)-1 {
				part := time.Until(dl) / time.Duration(len(ips)-i)
				actx, cancel = context.WithTimeout(ctx, max(part, dnsMinAttempt))
			}
			c, err := d.DialContext(actx, network, net.JoinHostPort(ip.String(), port))
			cancel()
			if err == nil {
				return c, nil
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}
