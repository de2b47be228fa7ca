package netguard

import "net/netip"

// blockedRange is one special-purpose range and how to name it.
type blockedRange struct {
	prefix netip.Prefix
	what   string // completes "1.2.3.4 is ..."
}

// blockedRanges lists the ranges no outbound connection may reach unless
// allowed explicitly. Narrower ranges come before the ranges that contain
// them so that the more precise name is reported.
var blockedRanges = []blockedRange{
	// IPv4
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this-network) address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.169.254/32"), "the cloud metadata address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},

	// IPv6
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "the cloud metadata address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address"},
}

// IPv6 ranges whose addresses carry an IPv4 address that decides where the
// packets end up.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // ::a.b.c.d (deprecated)
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // ::ffff:0:a.b.c.d (SIIT)
	nat64          = netip.MustParsePrefix("64:ff9b::/96")    // 64:ff9b::a.b.c.d
	sixToFour      = netip.MustParsePrefix("2002::/16")       // 2002:aabb:ccdd::
)

// Blocked reports whether ip is in a range outbound connections may not
// reach by default and, if so, names it ("a loopback address"). IPv4
// addresses inside IPv6 ones (mapped, compatible, translated, NAT64 and
// 6to4 forms) are judged as the IPv4 address they carry. Anything that is
// not a global unicast address is blocked.
func Blocked(ip netip.Addr) (what string, blocked bool) {
	if !ip.IsValid() {
		return "not a valid address", true
	}
	ip = ip.WithZone("").Unmap()
	for _, r := range blockedRanges {
		if r.prefix.Contains(ip) {
			return r.what, true
		}
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if what, blocked := Blocked(v4); blocked {
			return what + " inside an IPv6 address", true
		}
	}
	if !ip.IsGlobalUnicast() {
		return "not a global unicast address", true
	}
	return "", false
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries, if it is
// of a form that carries one.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case ipv4Compatible.Contains(ip), ipv4Translated.Contains(ip), nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
