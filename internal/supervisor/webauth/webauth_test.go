package webauth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

const testToken = "s3cret-token"

// clock is a settable time for expiry tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestAuthority(t *testing.T, c *clock, cfg Config) *Authority {
	t.Helper()
	cfg.Token = testToken
	if c != nil {
		cfg.Now = c.now
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// echo answers 200 with the credential the guard found and the query the
// handler sees.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "%s|%s", CredentialOf(r), r.URL.RawQuery)
})

// do runs one request through g and returns the recorder.
func do(g http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.Host = "127.0.0.1:7777"
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec
}

func errorCode(t *testing.T, rec *httptest.ResponseRecorder) wire.Code {
	t.Helper()
	var r api.ErrorReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.Error == nil {
		t.Fatalf("not a JSON error: %d %q", rec.Code, rec.Body.String())
	}
	if r.Error.StatusCode != rec.Code {
		t.Fatalf("statusCode %d in a %d answer", r.Error.StatusCode, rec.Code)
	}
	return r.Error.Code
}

func TestParseOrigin(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"http://localhost:5173", "http://localhost:5173", true},
		{"HTTP://LocalHost:5173/", "http://localhost:5173", true},
		{"http://example.com:80", "http://example.com", true},
		{"https://example.com:443", "https://example.com", true},
		{"https://example.com:8443", "https://example.com:8443", true},
		{"http://[::1]:5173", "http://[::1]:5173", true},
		{"*", "", false},
		{"null", "", false},
		{"ftp://example.com", "", false},
		{"example.com", "", false},
		{"http://example.com/app", "", false},
		{"http://example.com?x=1", "", false},
		{"http://user@example.com", "", false},
		{"http://", "", false},
		{"http://a:b:c", "", false},
		{"http://example.com:x", "", false},
	}
	for _, tc := range tests {
		got, err := ParseOrigin(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestHostHeaderMustNameTheSupervisor(t *testing.T) {
	a := newTestAuthority(t, nil, Config{AllowOrigins: []string{"https://console.example"}, AllowHosts: []string{"box.lan", "proxy.example:443"}})
	tests := []struct {
		name   string
		listen string
		tls    bool
		host   string
		ok     bool
	}{
		{"loopback address", "127.0.0.1:7777", false, "127.0.0.1:7777", true},
		{"another loopback address", "127.0.0.1:7777", false, "127.0.0.2:7777", true},
		{"localhost", "127.0.0.1:7777", false, "localhost:7777", true},
		{"localhost in capitals", "127.0.0.1:7777", false, "LOCALHOST:7777", true},
		{"ipv6 loopback", "[::1]:7777", false, "[::1]:7777", true},
		{"loopback on another port (a local proxy)", "127.0.0.1:7777", false, "localhost:8888", true},
		{"no port means 80", "192.0.2.10:80", false, "192.0.2.10", true},
		{"no port means 443 under TLS", "192.0.2.10:443", true, "192.0.2.10", true},
		{"no port is not 7777", "192.0.2.10:7777", false, "192.0.2.10", false},
		{"the listen address on another port", "192.0.2.10:7777", false, "192.0.2.10:8888", false},
		{"a rebinding name", "127.0.0.1:7777", false, "evil.example:7777", false},
		{"a name ending in localhost", "127.0.0.1:7777", false, "evil.localhost.example:7777", false},
		{"the listen address", "192.0.2.10:7777", false, "192.0.2.10:7777", true},
		{"any address when listening on all", "0.0.0.0:7777", false, "198.51.100.7:7777", true},
		{"not a name when listening on all", "0.0.0.0:7777", false, "evil.example:7777", false},
		{"an address not listened on", "192.0.2.10:7777", false, "198.51.100.7:7777", false},
		{"allow-host with the listening port", "127.0.0.1:7777", false, "box.lan:7777", true},
		{"allow-host on another port", "127.0.0.1:7777", false, "box.lan:8888", false},
		{"allow-host with its port", "127.0.0.1:7777", false, "proxy.example:443", true},
		{"an allowed origin's host", "127.0.0.1:7777", false, "console.example:443", true},
		{"empty", "127.0.0.1:7777", false, "", false},
		{"garbage", "127.0.0.1:7777", false, "a b:7777", false},
		{"userinfo trick", "127.0.0.1:7777", false, "evil.example@127.0.0.1:7777", false},
		{"two colons", "127.0.0.1:7777", false, "127.0.0.1:7777:1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := a.Guard(Listener{Addr: tc.listen, TLS: tc.tls}, echo)
			rec := do(g, "GET", "/v1/health", map[string]string{"Host": tc.host, "Authorization": "Bearer " + testToken})
			if ok := rec.Code == 200; ok != tc.ok {
				t.Fatalf("Host %q on %s: HTTP %d %s", tc.host, tc.listen, rec.Code, rec.Body)
			}
			if !tc.ok && errorCode(t, rec) != wire.CodeForbidden {
				t.Fatalf("refused with %s", rec.Body)
			}
		})
	}
	// The unix socket checks no Host.
	if rec := do(a.Guard(Listener{Local: true}, echo), "GET", "/v1/health", map[string]string{"Host": "supervisor"}); rec.Code != 200 {
		t.Fatalf("unix socket: %d", rec.Code)
	}
}

func TestOriginAndCORS(t *testing.T) {
	a := newTestAuthority(t, nil, Config{AllowOrigins: []string{"http://localhost:5173"}})
	g := a.Guard(Listener{Addr: "127.0.0.1:7777"}, echo)
	bearer := "Bearer " + testToken
	tests := []struct {
		name     string
		method   string
		hdr      map[string]string
		code     int
		wantCORS bool
	}{
		{"no origin", "GET", map[string]string{"Authorization": bearer}, 200, false},
		{"same origin", "POST", map[string]string{"Authorization": bearer, "Origin": "http://127.0.0.1:7777"}, 200, false},
		{"allowed origin", "POST", map[string]string{"Authorization": bearer, "Origin": "http://localhost:5173"}, 200, true},
		{"another origin", "GET", map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}, 403, false},
		{"allowed host, other port", "GET", map[string]string{"Authorization": bearer, "Origin": "http://localhost:5174"}, 403, false},
		{"other scheme", "GET", map[string]string{"Authorization": bearer, "Origin": "https://localhost:5173"}, 403, false},
		{"null origin", "GET", map[string]string{"Authorization": bearer, "Origin": "null"}, 403, false},
		{"another origin without a credential", "GET", map[string]string{"Origin": "http://evil.example"}, 403, false},
		{"preflight from an allowed origin", "OPTIONS", map[string]string{"Origin": "http://localhost:5173",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-evil"}, 204, true},
		{"preflight from another origin", "OPTIONS", map[string]string{"Origin": "http://evil.example",
			"Access-Control-Request-Method": "POST"}, 403, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(g, tc.method, "/v1/sessions", tc.hdr)
			if rec.Code != tc.code {
				t.Fatalf("HTTP %d %s, want %d", rec.Code, rec.Body, tc.code)
			}
			h := rec.Header()
			if got := h.Get("Access-Control-Allow-Origin") != ""; got != tc.wantCORS {
				t.Fatalf("CORS headers %v, want %v: %v", got, tc.wantCORS, h)
			}
			if tc.wantCORS && (h.Get("Access-Control-Allow-Origin") != tc.hdr["Origin"] || h.Get("Access-Control-Allow-Credentials") != "true") {
				t.Fatalf("CORS headers %v", h)
			}
			if tc.code == 403 && errorCode(t, rec) != wire.CodeForbidden {
				t.Fatalf("refused with %s", rec.Body)
			}
			if tc.code == 204 && (h.Get("Access-Control-Allow-Headers") != "authorization, content-type" || h.Get("Access-Control-Allow-Methods") == "") {
				t.Fatalf("preflight headers %v", h)
			}
		})
	}
}

// SetAllowed (a SIGHUP reload) changes the origins and host names every
// existing guard admits from the next request on; a policy it cannot read
// changes nothing.
func TestSetAllowedTakesEffectOnExistingGuards(t *testing.T) {
	a := newTestAuthority(t, nil, Config{AllowOrigins: []string{"http://localhost:5173"}})
	g := a.Guard(Listener{Addr: "0.0.0.0:7777"}, echo)
	bearer := "Bearer " + testToken
	fromOrigin := func(origin string) int {
		return do(g, "GET", "/v1/sessions", map[string]string{"Authorization": bearer, "Origin": origin}).Code
	}
	forHost := func(host string) int {
		return do(g, "GET", "/v1/sessions", map[string]string{"Authorization": bearer, "Host": host}).Code
	}
	steps := []struct {
		name            string
		origins, hosts  []string
		wantErr         bool
		old, new, named int // the old origin, the new origin, Host corral.example:7777
	}{
		{"as started", nil, nil, false, 200, 403, 403},
		{"reloaded", []string{"https://console.example"}, []string{"corral.example"}, false, 403, 200, 200},
		{"unreadable: nothing changes", []string{"not an origin"}, nil, true, 403, 200, 200},
		{"emptied", []string{}, []string{}, false, 403, 403, 403},
	}
	for i, st := range steps {
		if i > 0 {
			if err := a.SetAllowed(st.origins, st.hosts); (err != nil) != st.wantErr {
				t.Fatalf("%s: SetAllowed = %v", st.name, err)
			}
		}
		if got := fromOrigin("http://localhost:5173"); got != st.old {
			t.Errorf("%s: the first origin gets %d, want %d", st.name, got, st.old)
		}
		if got := fromOrigin("https://console.example"); got != st.new {
			t.Errorf("%s: the reloaded origin gets %d, want %d", st.name, got, st.new)
		}
		if got := forHost("corral.example:7777"); got != st.named {
			t.Errorf("%s: Host corral.example:7777 gets %d, want %d", st.name, got, st.named)
		}
	}
}

func TestBearerToken(t *testing.T) {
	a := newTestAuthority(t, nil, Config{})
	g := a.Guard(Listener{Addr: "127.0.0.1:7777"}, echo)
	tests := []struct {
		name, header string
		code         int
	}{
		{"no header", "", 401},
		{"right token", "Bearer " + testToken, 200},
		{"scheme in lower case", "bearer " + testToken, 200},
		{"scheme in capitals", "BEARER " + testToken, 200},
		{"several spaces", "Bearer   " + testToken, 200},
		{"wrong token", "Bearer nope", 401},
		{"token prefix", "Bearer " + testToken[:5], 401},
		{"token and more", "Bearer " + testToken + "x", 401},
		{"wrong scheme", "Basic " + testToken, 401},
		{"no scheme", testToken, 401},
		{"empty token", "Bearer ", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.header != "" {
				hdr["Authorization"] = tc.header
			}
			rec := do(g, "GET", "/v1/health", hdr)
			if rec.Code != tc.code {
				t.Fatalf("HTTP %d, want %d", rec.Code, tc.code)
			}
			if tc.code == 401 {
				if errorCode(t, rec) != wire.CodeUnauthorized || rec.Header().Get("WWW-Authenticate") == "" || rec.Header().Get("Connection") != "close" {
					t.Fatalf("401 without its headers: %v", rec.Header())
				}
			} else if rec.Body.String() != "bearer token|" {
				t.Fatalf("credential %q", rec.Body)
			}
		})
	}
	// Without a token nothing is admitted, not even an empty bearer.
	empty, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(empty.Guard(Listener{Addr: "127.0.0.1:7777"}, echo), "GET", "/", map[string]string{"Authorization": "Bearer "}); rec.Code != 401 {
		t.Fatalf("no token configured: %d", rec.Code)
	}
}

// signIn runs the sign-in handler behind g's guard, as the API does.
func signIn(a *Authority, l Listener, hdr map[string]string, code string) *httptest.ResponseRecorder {
	h := a.Guard(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.SignIn(w, r, code); err != nil {
			refuse(w, wire.ToError(err))
			return
		}
		w.WriteHeader(200)
	}))
	return do(h, "POST", SessionPath, hdr)
}

func sessionCookie(t *testing.T, rec *httptest.ResponseRecorder, name string) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cookie %s in %v", name, rec.Header())
	return nil
}

func TestSessionCookie(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	a := newTestAuthority(t, c, Config{AllowOrigins: []string{"http://localhost:5173"}})
	l := Listener{Addr: "127.0.0.1:7777"}
	g := a.Guard(l, echo)

	if rec := signIn(a, l, nil, ""); rec.Code != 401 {
		t.Fatalf("sign-in without a credential: %d", rec.Code)
	}
	rec := signIn(a, l, map[string]string{"Authorization": "Bearer " + testToken}, "")
	if rec.Code != 200 {
		t.Fatalf("sign-in: %d %s", rec.Code, rec.Body)
	}
	ck := sessionCookie(t, rec, "corral_session_7777")
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/" || ck.MaxAge != int(DefaultSessionTTL/time.Second) {
		t.Fatalf("cookie attributes %+v", ck)
	}
	cookie := ck.Name + "=" + ck.Value
	tests := []struct {
		name string
		hdr  map[string]string
		code int
	}{
		{"the cookie alone", map[string]string{"Cookie": cookie}, 200},
		{"from an allowed origin", map[string]string{"Cookie": cookie, "Origin": "http://localhost:5173"}, 200},
		{"same-origin fetch metadata", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin"}, 200},
		{"a page on another port of the site, no Origin", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-site"}, 401},
		{"another site, no Origin", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, 401},
		{"from another origin", map[string]string{"Cookie": cookie, "Origin": "http://evil.example"}, 403},
		{"a forged cookie", map[string]string{"Cookie": ck.Name + "=forged"}, 401},
		{"another port's cookie", map[string]string{"Cookie": "corral_session_8888=" + ck.Value}, 401},
		{"a wrong bearer is not rescued by the cookie", map[string]string{"Cookie": cookie, "Authorization": "Bearer nope"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(g, "GET", "/v1/sessions", tc.hdr)
			if rec.Code != tc.code {
				t.Fatalf("HTTP %d %s, want %d", rec.Code, rec.Body, tc.code)
			}
			if tc.code == 200 && !strings.HasPrefix(rec.Body.String(), "session cookie|") {
				t.Fatalf("credential %q", rec.Body)
			}
		})
	}

	// It expires.
	c.t = c.t.Add(DefaultSessionTTL)
	if rec := do(g, "GET", "/v1/sessions", map[string]string{"Cookie": cookie}); rec.Code != 401 {
		t.Fatalf("expired cookie: %d", rec.Code)
	}
	// Signing out ends it.
	rec = signIn(a, l, map[string]string{"Authorization": "Bearer " + testToken}, "")
	ck = sessionCookie(t, rec, "corral_session_7777")
	cookie = ck.Name + "=" + ck.Value
	out := a.Guard(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.SignOut(w, r) }))
	rec = do(out, "DELETE", SessionPath, map[string]string{"Cookie": cookie})
	if rec.Code != 200 || sessionCookie(t, rec, ck.Name).MaxAge >= 0 {
		t.Fatalf("sign-out: %d %v", rec.Code, rec.Header())
	}
	if rec := do(g, "GET", "/v1/sessions", map[string]string{"Cookie": cookie}); rec.Code != 401 {
		t.Fatalf("cookie after sign-out: %d", rec.Code)
	}
}

func TestSessionCookieUnderTLS(t *testing.T) {
	a := newTestAuthority(t, nil, Config{})
	l := Listener{Addr: "127.0.0.1:8443", TLS: true}
	rec := signIn(a, l, map[string]string{"Authorization": "Bearer " + testToken, "Host": "localhost:8443"}, "")
	ck := sessionCookie(t, rec, "__Host-corral_session_8443")
	if !ck.Secure || !ck.HttpOnly || ck.Path != "/" || ck.Domain != "" {
		t.Fatalf("cookie attributes %+v", ck)
	}
}

func TestLoginCode(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	a := newTestAuthority(t, c, Config{})
	l := Listener{Addr: "127.0.0.1:7777"}
	mint := func(l Listener, hdr map[string]string) (Secret, *httptest.ResponseRecorder) {
		var s Secret
		h := a.Guard(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var err error
			if s, err = a.NewLoginCode(r); err != nil {
				refuse(w, wire.ToError(err))
			}
		}))
		return s, do(h, "POST", CodePath, hdr)
	}
	// Owners mint them: the unix socket, the bearer token.
	code, rec := mint(Listener{Local: true}, nil)
	if rec.Code != 200 || len(code.Value) < 40 || !code.ExpiresAt.Equal(c.t.Add(DefaultCodeTTL)) {
		t.Fatalf("mint on the socket: %d %+v", rec.Code, code)
	}
	if _, rec := mint(l, map[string]string{"Authorization": "Bearer " + testToken}); rec.Code != 200 {
		t.Fatalf("mint with the token: %d", rec.Code)
	}
	// A page's cookie does not.
	rec = signIn(a, l, map[string]string{"Authorization": "Bearer " + testToken}, "")
	ck := sessionCookie(t, rec, l.CookieName())
	if _, rec := mint(l, map[string]string{"Cookie": ck.Name + "=" + ck.Value}); rec.Code != 403 {
		t.Fatalf("mint with a cookie: %d", rec.Code)
	}

	// Exchanged once, without any other credential.
	if rec := signIn(a, l, nil, code.Value); rec.Code != 200 {
		t.Fatalf("exchange: %d %s", rec.Code, rec.Body)
	}
	if rec := signIn(a, l, nil, code.Value); rec.Code != 401 {
		t.Fatalf("second exchange: %d", rec.Code)
	}
	if rec := signIn(a, l, nil, "made-up"); rec.Code != 401 {
		t.Fatalf("a made-up code: %d", rec.Code)
	}
	late, _ := mint(Listener{Local: true}, nil)
	c.t = c.t.Add(DefaultCodeTTL)
	if rec := signIn(a, l, nil, late.Value); rec.Code != 401 {
		t.Fatalf("an expired code: %d", rec.Code)
	}
	// Only the exchange passes the guard without a credential.
	if rec := do(a.Guard(l, echo), "POST", TicketPath, nil); rec.Code != 401 {
		t.Fatalf("ticket without a credential: %d", rec.Code)
	}
}

func TestTicket(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	a := newTestAuthority(t, c, Config{})
	l := Listener{Addr: "127.0.0.1:7777"}
	g := a.Guard(l, echo)
	mint := func(hdr map[string]string) (Secret, int) {
		var s Secret
		h := a.Guard(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var err error
			if s, err = a.NewTicket(r); err != nil {
				refuse(w, wire.ToError(err))
			}
		}))
		return s, do(h, "POST", TicketPath, hdr).Code
	}
	tk, code := mint(map[string]string{"Authorization": "Bearer " + testToken})
	if code != 200 || !tk.ExpiresAt.Equal(c.t.Add(DefaultTicketTTL)) {
		t.Fatalf("mint: %d %+v", code, tk)
	}
	// One GET, and the handler never sees it.
	rec := do(g, "GET", "/v1/sessions/x/events?from=3&ticket="+tk.Value+"&follow=true", nil)
	if rec.Code != 200 || rec.Body.String() != "ticket|follow=true&from=3" {
		t.Fatalf("first use: %d %q", rec.Code, rec.Body)
	}
	if rec := do(g, "GET", "/v1/sessions/x/events?ticket="+tk.Value, nil); rec.Code != 401 {
		t.Fatalf("second use: %d", rec.Code)
	}
	// Not for other methods, not twice in one URL, not past its time.
	tk, _ = mint(map[string]string{"Authorization": "Bearer " + testToken})
	if rec := do(g, "POST", "/v1/sessions?ticket="+tk.Value, nil); rec.Code != 401 {
		t.Fatalf("POST with a ticket: %d", rec.Code)
	}
	tk, _ = mint(map[string]string{"Authorization": "Bearer " + testToken})
	if rec := do(g, "GET", "/v1/sessions?ticket="+tk.Value+"&ticket="+tk.Value, nil); rec.Code != 401 {
		t.Fatalf("two tickets: %d", rec.Code)
	}
	tk, _ = mint(map[string]string{"Authorization": "Bearer " + testToken})
	c.t = c.t.Add(DefaultTicketTTL)
	if rec := do(g, "GET", "/v1/sessions?ticket="+tk.Value, nil); rec.Code != 401 {
		t.Fatalf("expired ticket: %d", rec.Code)
	}
	// A ticket does not mint tickets.
	tk, _ = mint(map[string]string{"Authorization": "Bearer " + testToken})
	h := a.Guard(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.NewTicket(r); err == nil {
			t.Error("a ticket minted a ticket")
		}
	}))
	do(h, "GET", "/x?ticket="+tk.Value, nil)
}

func TestVaultKeepsItsBound(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	v := newVault(time.Minute, 4)
	var first Secret
	for i := range 10 {
		c.t = c.t.Add(time.Second)
		s := v.add(c.t)
		if i == 0 {
			first = s
		}
	}
	if len(v.m) != 4 {
		t.Fatalf("%d secrets kept, bound 4", len(v.m))
	}
	if v.valid(c.t, first.Value) {
		t.Fatal("the oldest secret survived")
	}
}

// TestRefusalClosesWithoutReadingTheBody is finding 5 of issue 18: a client
// without a credential sending a body a byte at a time gets its 401 at once
// and its connection closed. (Before, the server read on to reuse the
// connection: without end for a chunked body or one under 256 KiB.)
func TestRefusalClosesWithoutReadingTheBody(t *testing.T) {
	a := newTestAuthority(t, nil, Config{})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = a.Guard(Listener{Addr: srv.Listener.Addr().String()}, echo)
	srv.Start()
	defer srv.Close()
	for _, framing := range []string{"Content-Length: 200000", "Transfer-Encoding: chunked"} {
		t.Run(framing, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\n%s\r\nContent-Type: application/json\r\n\r\n", srv.Listener.Addr(), framing)
			chunked := strings.HasPrefix(framing, "Transfer")
			if chunked {
				fmt.Fprint(conn, "10000\r\n")
			}
			// Keep trickling, as the attacker does, while the answer is
			// read.
			stop := make(chan struct{})
			trickled := make(chan struct{})
			defer func() { close(stop); <-trickled }()
			go func() {
				defer close(trickled)
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			conn.SetReadDeadline(time.Now().Add(time.Minute))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			if resp.StatusCode != 401 || !resp.Close {
				t.Fatalf("HTTP %d, close %v", resp.StatusCode, resp.Close)
			}
			io.Copy(io.Discard, resp.Body)
			// The server closes its end: the read ends (EOF or reset)
			// instead of waiting for the minute.
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("more data after the 401")
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the connection stayed open after the 401")
			}
		})
	}
}

// TestPublicPaths: the console's page and files load without a credential
// (a browser needs them before it can sign in), and nothing else does.
func TestPublicPaths(t *testing.T) {
	a := newTestAuthority(t, nil, Config{PublicPaths: []string{"/", "/assets/"}})
	g := a.Guard(Listener{Addr: "127.0.0.1:7777"}, echo)
	for _, tc := range []struct {
		method, path string
		hdr          map[string]string
		code         int
	}{
		{"GET", "/", nil, 200},
		{"HEAD", "/", nil, 200},
		{"GET", "/assets/app.js", nil, 200},
		{"POST", "/", nil, 401},
		{"GET", "/assets", nil, 401},
		{"GET", "/assetsx/app.js", nil, 401},
		{"GET", "/v1/sessions", nil, 401},
		{"GET", "/v1/health", nil, 401},
		{"GET", "/", map[string]string{"Origin": "http://evil.example"}, 403},
		{"GET", "/", map[string]string{"Host": "evil.example:7777"}, 403},
	} {
		if rec := do(g, tc.method, tc.path, tc.hdr); rec.Code != tc.code {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.path, tc.hdr, rec.Code, tc.code)
		}
	}
}
