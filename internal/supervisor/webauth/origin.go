package webauth

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ParseOrigin reads a web origin as --allow-origin takes it and returns it
// the way a browser sends it in Origin: scheme://host[:port], lower case,
// without a default port ("HTTP://LocalHost:80" is "http://localhost").
// Only http and https origins are taken; "*", "null", a path, a query and
// user information are refused, each with a reason.
func ParseOrigin(s string) (string, error) {
	switch s {
	case "*":
		return "", fmt.Errorf("origin %q: name each origin; a wildcard would let every web page in", s)
	case "null":
		return "", fmt.Errorf("origin %q: sandboxed and file pages all share this origin; it cannot be allowed", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", s, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", fmt.Errorf("origin %q: want http://host[:port] or https://host[:port]", s)
	case u.User != nil, u.Host == "", u.Opaque != "":
		return "", fmt.Errorf("origin %q: want scheme://host[:port] and nothing else", s)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.ForceQuery, u.Fragment != "":
		return "", fmt.Errorf("origin %q: an origin has no path, query or fragment", s)
	}
	hp, err := splitHost(u.Host, defaultPort(scheme))
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", s, err)
	}
	return scheme + "://" + hp.origin(defaultPort(scheme)), nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// hostPort is a lower-case host name or address (IPv6 without brackets) and
// a port.
type hostPort struct {
	name, port string
}

// origin writes hp as the host part of an origin: the port only when it is
// not the scheme's default.
func (hp hostPort) origin(def string) string {
	name := hp.name
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if hp.port == def || hp.port == "" {
		return name
	}
	return name + ":" + hp.port
}

// splitHost reads a Host header (or an origin's host): name, [v6], name:port
// or [v6]:port. A missing port is def.
func splitHost(h, def string) (hostPort, error) {
	h = strings.ToLower(h)
	var name, port string
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return hostPort{}, fmt.Errorf("host %s: unclosed [", quote(h))
		}
		name, port = h[1:end], h[end+1:]
		if ip := net.ParseIP(name); ip == nil || ip.To4() != nil {
			return hostPort{}, fmt.Errorf("host %s: an IPv6 address goes in brackets, nothing else", quote(h))
		}
		if port != "" {
			if port[0] != ':' {
				return hostPort{}, fmt.Errorf("host %s: want [address]:port", quote(h))
			}
			port = port[1:]
		}
	} else {
		var found bool
		name, port, found = strings.Cut(h, ":")
		if strings.Contains(port, ":") {
			return hostPort{}, fmt.Errorf("host %s: an IPv6 address goes in brackets", quote(h))
		}
		if found && port == "" {
			return hostPort{}, fmt.Errorf("host %s: empty port", quote(h))
		}
	}
	if name == "" {
		return hostPort{}, fmt.Errorf("host %s: no name", quote(h))
	}
	if strings.ContainsAny(name, "/?#@\\ %") {
		return hostPort{}, fmt.Errorf("host %s: not a host name", quote(h))
	}
	if port == "" {
		port = def
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return hostPort{}, fmt.Errorf("host %s: the port is not a number", quote(h))
		}
	}
	return hostPort{name: name, port: port}, nil
}

// parseAllowHost reads an --allow-host entry: NAME or NAME:PORT. Without a
// port the entry matches the listening port (kept empty here).
func parseAllowHost(s string) (hostPort, error) {
	hp, err := splitHost(s, "")
	if err != nil {
		return hostPort{}, fmt.Errorf("--allow-host: %w", err)
	}
	return hp, nil
}

// originHost is the Host a request from origin o carries when o is the
// supervisor itself (behind a proxy, or on a name the operator chose).
func originHost(o string) hostPort {
	scheme, host, _ := strings.Cut(o, "://")
	hp, _ := splitHost(host, defaultPort(scheme)) // o came from ParseOrigin
	return hp
}
