package engineprobe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
)

// Credential is the credentials check of an engine whose sign-in needs
// item: passed when the item is among secrets.
func Credential(item string, secrets map[string]string) api.EngineCheck {
	if secrets[item] != "" {
		return OK(engine.CheckCredentials, "%s is set", item)
	}
	return Failed(engine.CheckCredentials, "no %s: store it with `supervisor creds set %s` (the OS keyring, service %s, or serve's --credentials file)",
		item, item, creds.Service)
}

// acceptTimeout bounds the request of an accepted check.
const acceptTimeout = 15 * time.Second

// Models is the accepted check of item: a GET of url, an endpoint's list
// of models (the cheapest request a provider authenticates), with header
// carrying the credential. 200 means accepted, 401 or 403 rejected;
// anything else fails the check with what came back. Redirects are not
// followed: the credential goes to url alone.
func Models(ctx context.Context, url string, header http.Header, item string) api.EngineCheck {
	ctx, cancel := context.WithTimeout(ctx, acceptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Failed(engine.CheckAccepted, "model endpoint %s: %v", url, err)
	}
	req.Header = header.Clone()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return Failed(engine.CheckAccepted, "GET %s: %v", url, trimURLError(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode == http.StatusOK:
		return OK(engine.CheckAccepted, "GET %s accepted %s", url, item)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Failed(engine.CheckAccepted, "GET %s refused %s (HTTP %d): store a valid one with `supervisor creds set %s`", url, item, resp.StatusCode, item)
	default:
		return Failed(engine.CheckAccepted, "GET %s answered HTTP %d: %s", url, resp.StatusCode, oneLine(string(body)))
	}
}

// NotAsked is the accepted check left out because it was not asked for.
func NotAsked() api.EngineCheck {
	return Skipped(engine.CheckAccepted, "not asked for: ask with check=accepted (it sends the credential to the model endpoint)")
}

// EndpointURL joins an endpoint base URL and a path, with exactly one
// slash between them.
func EndpointURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

func trimURLError(err error) string {
	msg := err.Error()
	// url.Error repeats the method and URL the message already names.
	if i := strings.LastIndex(msg, "\": "); i >= 0 {
		return msg[i+3:]
	}
	return msg
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}
