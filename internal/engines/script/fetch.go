package script

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

const fetchTimeout = 30 * time.Second

// fetch GETs rawURL and returns the start of its body. It speaks plain
// HTTP/1.1 on a connection of its own rather than through net/http's
// Client: the pooled transport, with TLS and HTTP/2, is a fifth of the
// runner's binary and over a megabyte of every runner's memory, for a tool
// that scenarios point at pages served on this machine. An https URL is
// refused with a clear error; redirects are not followed.
func (p *player) fetch(rawURL string) (string, *int, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", nil, fmt.Errorf("fetch: %w", err)
	}
	if u.Scheme != "http" {
		return "", nil, fmt.Errorf("fetch %s: the script engine fetches http:// URLs only", rawURL)
	}
	ctx, cancel := context.WithTimeout(p.ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", nil, fmt.Errorf("fetch: %w", err)
	}
	req.Close = true // one request per connection
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("fetch %s: %w", rawURL, err)
	}
	defer conn.Close()
	// A stop or the timeout ends a fetch blocked on the connection.
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	if err := req.Write(conn); err != nil {
		return "", nil, fetchErr(ctx, rawURL, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", nil, fetchErr(ctx, rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxToolOutput))
	if err != nil {
		return clipOutput(body), nil, fetchErr(ctx, rawURL, err)
	}
	if resp.StatusCode >= 400 {
		err = fmt.Errorf("fetch %s: %s", rawURL, resp.Status)
	}
	return clipOutput(body), nil, err
}

// fetchErr names the context's reason when it is why a connection failed.
func fetchErr(ctx context.Context, rawURL string, err error) error {
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return fmt.Errorf("fetch %s: %w", rawURL, err)
}
