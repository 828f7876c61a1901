package browsertest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/client"
)

// pageServer serves an empty page, the ground a test's script runs on, at
// an origin of its own.
func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>page</title>\n"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

type accessResult struct {
	Good struct {
		SignIn, SignInAgain, Create, List int
		ID                                string
		CookieEvents, TicketEvents        struct{ Type, LastEventID string }
		UsedTicketEvents                  struct{ Error bool }
		Terminal, TicketTerminal          struct {
			Opened   *struct{ Role string }
			Output   string
			ExitCode *int
			Error    bool
		}
		CookieVisible string
	}
	Others map[string]struct {
		Results  map[string]json.RawMessage
		Statuses []struct {
			URL, Method string
			Status      int
		}
	}
}

// TestBrowserAccess is issue 19's browser test: in real headless Chromium,
// a page on an allowed origin signs in with a login code, creates a
// session, streams its events (with the cookie, and with a ticket) and
// runs a terminal over the WebSocket; pages on two other origins — one on
// another port of the same host, which the cookie reaches, one on another
// host name — are refused on every route, the WebSocket included, and
// change nothing.
func TestBrowserAccess(t *testing.T) {
	b := Find(t)
	good, other := pageServer(t), pageServer(t)
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	sup := testsupervisor.Start(t, testsupervisor.Options{TCP: true, Args: []string{"--allow-origin", good.URL}})
	ctx := context.Background()
	code, err := sup.Client.NewLoginCode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(sup.Work, "other-origin-ran")
	others := []string{other.URL, "http://localhost:" + otherPort}
	raw := b.Run(t, "browser_access.mjs", map[string]any{
		"sup": sup.URL, "good": good.URL, "others": others, "code": code.Code, "cwd": sup.Work, "marker": marker,
	}, 3*time.Minute)
	var res accessResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("script output %q: %v", raw, err)
	}

	g := res.Good
	if g.SignIn != 200 || g.SignInAgain != 401 || g.Create != 201 || g.List != 200 || g.ID == "" {
		t.Fatalf("allowed page: sign-in %d, again %d, create %d, list %d, id %q", g.SignIn, g.SignInAgain, g.Create, g.List, g.ID)
	}
	if g.CookieEvents.Type != "sessionStarted" || g.TicketEvents.Type != "sessionStarted" || !g.UsedTicketEvents.Error {
		t.Fatalf("allowed page's streams: cookie %+v, ticket %+v, used ticket %+v", g.CookieEvents, g.TicketEvents, g.UsedTicketEvents)
	}
	for name, term := range map[string]struct {
		got  string
		want string
		ok   bool
	}{
		"with the cookie": {g.Terminal.Output, "hello-from-the-page", g.Terminal.Opened != nil && g.Terminal.Opened.Role == "owner" && g.Terminal.ExitCode != nil && *g.Terminal.ExitCode == 0},
		"with a ticket":   {g.TicketTerminal.Output, "hello-with-a-ticket", g.TicketTerminal.Opened != nil && g.TicketTerminal.ExitCode != nil && *g.TicketTerminal.ExitCode == 0},
	} {
		if !term.ok || !strings.Contains(term.got, term.want) {
			t.Fatalf("allowed page's terminal %s: %+v", name, g)
		}
	}
	if g.CookieVisible != "" {
		t.Fatalf("the page can read cookies: %q", g.CookieVisible)
	}

	for _, origin := range others {
		o, ok := res.Others[origin]
		if !ok {
			t.Fatalf("no result for %s", origin)
		}
		// The page learns nothing: each fetch fails, or is opaque.
		for name, r := range o.Results {
			var v struct {
				Error  string
				Status int
				Type   string
				Body   *string
				Got    bool
			}
			json.Unmarshal(r, &v)
			switch {
			case name == "events" || name == "terminal":
				if v.Got || !strings.Contains(string(r), `"error":true`) {
					t.Errorf("%s: %s opened: %s", origin, name, r)
				}
			case v.Error != "":
			case v.Type == "opaque" && v.Status == 0 && (v.Body == nil || *v.Body == ""):
			default:
				t.Errorf("%s: %s readable: %s", origin, name, r)
			}
		}
		// And the supervisor said no to every request that reached it.
		if len(o.Statuses) < 4 {
			t.Errorf("%s: only %d answers from the supervisor seen: %+v", origin, len(o.Statuses), o.Statuses)
		}
		for _, s := range o.Statuses {
			if s.Status != http.StatusForbidden {
				t.Errorf("%s: %s %s answered %d", origin, s.Method, s.URL, s.Status)
			}
		}
	}

	// Nothing the other pages tried happened.
	list, err := sup.Client.Sessions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != g.ID {
		t.Fatalf("sessions after the other origins: %+v %v", list, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("another origin's terminal ran: %v", err)
	}
	events := readEvents(t, sup.Client, g.ID)
	if strings.Contains(events, "from-another-origin") {
		t.Fatal("another origin's message reached the session")
	}
	for _, s := range []string{code.Code} {
		if strings.Contains(sup.Log(), s) {
			t.Fatal("the login code is in the supervisor's log")
		}
	}
}

func readEvents(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Events(ctx, id, client.EventsOptions{From: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b strings.Builder
	for {
		ev, err := s.Next()
		if err != nil {
			return b.String()
		}
		b.Write(ev)
		b.WriteByte('\n')
	}
}
