package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/pkg/wire"
)

// fakeHost stands in for the terminal host: it refuses the open with
// refuse, or upgrades and says what it was asked on the connection.
type fakeHost struct {
	refuse error
	got    chan termhost.Request
}

func (h *fakeHost) Attach(ctx context.Context, req termhost.Request, upgrade func() (*websocket.Conn, error)) error {
	h.got <- req
	if h.refuse != nil {
		return h.refuse
	}
	conn, err := upgrade()
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(req.Session+"/"+req.TermID+"/"+req.Role)); err != nil {
		return err
	}
	return conn.Close(websocket.StatusNormalClosure, "")
}

// TestTerminalHandsTheCheckedRequestToTheHost: the HTTP layer only checks
// the request and upgrades it; what the host refuses before the upgrade is
// answered as JSON with the error's status, and after the upgrade the
// connection is the host's.
func TestTerminalHandsTheCheckedRequestToTheHost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse error
		status int
	}{
		{"refused before the upgrade", wire.Errorf(wire.CodeNotFound, "no session s1"), http.StatusNotFound},
		{"served after the upgrade", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := &fakeHost{refuse: tc.refuse, got: make(chan termhost.Request, 1)}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.SetPathValue("id", "s1")
				r.SetPathValue("termId", "main")
				(&terminals{host}).serve(w, r)
			}))
			defer srv.Close()
			c, resp, err := dialTerm(t, srv.URL, "/?role=owner&cols=100&rows=30&command=sh", nil)
			req := <-host.got
			if req.Session != "s1" || req.TermID != "main" || req.Role != "owner" || req.Cols != 100 || req.Rows != 30 ||
				strings.Join(req.Command, " ") != "sh" {
				t.Errorf("the host was asked %+v", req)
			}
			if tc.refuse != nil {
				if err == nil || resp == nil || resp.StatusCode != tc.status {
					t.Fatalf("dial: %v, response %+v; want status %d", err, resp, tc.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, p, err := c.Read(testCtx(t))
			if err != nil || string(p) != "s1/main/owner" {
				t.Fatalf("read %q, %v from the host's connection", p, err)
			}
		})
	}
}
