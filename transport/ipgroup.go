package transport

import "net/netip"

// ipv6LimitBits is the IPv6 prefix the per-IP limits count as one source: a /64 is what a
// single subscriber or host is routinely given, so counting each address of it apart
// would let one client draw a fresh bucket per address.
const ipv6LimitBits = 64

// limitKey is the source a per-IP limit counts an address as: an IPv4 address (also one
// written IPv4-mapped, ::ffff:a.b.c.d) by itself, an IPv6 address by its /64 (the zone
// dropped). Anything that does not parse is counted as it is written.
func limitKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(ipv6LimitBits)
	if err != nil {
		return a.String()
	}
	return p.String()
}
