package gate

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// judgeFetch judges a web fetch tool call.
func (g *Gate) judgeFetch(raw string) verdict {
	u, err := url.Parse(raw)
	if err != nil {
		return askV(CategoryWeb, fmt.Sprintf("the URL does not parse (%v)", err))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return askV(CategoryWeb, fmt.Sprintf("%q is not an http or https URL", raw))
	}
	if u.User != nil {
		return askV(CategoryWeb, "the URL carries a user name or password")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return askV(CategoryWeb, "the URL names no host")
	}
	if g.policy.AllowNetwork {
		return allowV(CategoryWeb, "the policy allows network access")
	}
	for _, h := range g.policy.WebHosts {
		if hostMatches(h, host) {
			return allowV(CategoryWeb, fmt.Sprintf("%s is allowed by the web host %q", host, h))
		}
	}
	return askV(CategoryWeb, fmt.Sprintf("fetching from %s, which is not among the policy's web hosts", host))
}

// hostMatches matches a host against "example.com" (that host only) or
// "*.example.com" (its subdomains, not example.com itself).
func hostMatches(pattern, host string) bool {
	pattern = strings.ToLower(pattern)
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == pattern
}

func validHostPattern(h string) error {
	name := strings.TrimPrefix(h, "*.")
	if name == "" {
		return errors.New("empty host")
	}
	for _, c := range name {
		ok := c == '.' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return fmt.Errorf("host %q: only letters, digits, '-', '.' and a leading \"*.\" are allowed", h)
		}
	}
	return nil
}

// judgeMCP judges an MCP tool call against the policy's "server/tool"
// patterns.
func (g *Gate) judgeMCP(server, tool string) verdict {
	if server == "" || tool == "" {
		return askV(CategoryMCP, "the MCP call names no server or no tool")
	}
	for _, p := range g.policy.MCPTools {
		ps, pt, _ := strings.Cut(p, "/")
		if globMatch(ps, server) && globMatch(pt, tool) {
			return allowV(CategoryMCP, fmt.Sprintf("%s/%s is allowed by %q", server, tool, p))
		}
	}
	return askV(CategoryMCP, fmt.Sprintf("MCP tool %s/%s is not among the policy's MCP tools", server, tool))
}

func validMCPPattern(p string) error {
	server, tool, ok := strings.Cut(p, "/")
	if !ok || server == "" || tool == "" || strings.Contains(tool, "/") {
		return fmt.Errorf("%q is not of the form server/tool", p)
	}
	return nil
}
