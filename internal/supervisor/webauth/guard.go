package webauth

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// Paths a Guard knows: the login-code exchange is the one request it lets
// through without a credential.
const (
	SessionPath = "/v1/auth/session"
	TicketPath  = "/v1/auth/ticket"
	CodePath    = "/v1/auth/code"
)

// Listener says where a Guard serves.
type Listener struct {
	// Addr is the TCP address listened on (host:port, as the listener
	// reports it, so with the port it was given when asked for port 0).
	Addr string
	// TLS is set when the listener serves HTTPS: cookies are Secure, and a
	// Host without a port means 443.
	TLS bool
	// Local is set for the unix socket: its peer is the state folder's
	// owner, so neither Host nor a credential is checked.
	Local bool
}

// CookieName is the session cookie's name on l. Browsers send a host's
// cookies to every port of it, so the port is part of the name: two
// supervisors on one machine keep their own sessions. Under TLS the name
// has the __Host- prefix, which binds the cookie to this host and path /.
func (l *Listener) CookieName() string {
	name := "corral_session"
	if _, port, err := net.SplitHostPort(l.Addr); err == nil {
		name += "_" + port
	}
	if l.TLS {
		name = "__Host-" + name
	}
	return name
}

// Headers and methods a preflight may ask for.
var (
	corsMethods = "GET, POST, DELETE"
	corsHeaders = map[string]bool{"authorization": true, "content-type": true, "last-event-id": true, "accept": true}
)

// corsMaxAge is how long (seconds) a browser may cache a preflight's answer.
const corsMaxAge = "600"

// Guard checks every request to next (see the package comment): Host,
// Origin, then the credential, before anything else runs. A refusal is the
// API's JSON error, and its connection is closed without the body being
// read.
func (a *Authority) Guard(l Listener, next http.Handler) http.Handler {
	g := &guard{a: a, l: l, next: next}
	if !l.Local {
		host, port, err := net.SplitHostPort(l.Addr)
		if err == nil {
			g.port = port
			g.listenHost = strings.ToLower(host)
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				g.anyIP = true
			}
		}
	}
	return g
}

type guard struct {
	a          *Authority
	l          Listener
	next       http.Handler
	port       string
	listenHost string
	anyIP      bool // listening on 0.0.0.0 or [::]
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.l.Local && !g.hostAllowed(r.Host) {
		refuse(w, wire.Errorf(wire.CodeForbidden,
			"Host %s does not name this supervisor; use localhost or its address, or serve --allow-host NAME", quote(r.Host)))
		return
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if origin, present := r.Header["Origin"]; present {
		cross, ok := g.originAllowed(origin, r.Host)
		if !ok {
			refuse(w, wire.Errorf(wire.CodeForbidden,
				"origin %s may not call this supervisor; allow it with serve --allow-origin ORIGIN", quote(strings.Join(origin, ", "))))
			return
		}
		if cross {
			h.Set("Access-Control-Allow-Origin", origin[0])
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Expose-Headers", "Location, WWW-Authenticate")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				preflight(w, r)
				return
			}
		}
	}
	cred, err := g.authenticate(r)
	if err != nil {
		if !g.l.Local {
			h.Set("WWW-Authenticate", `Bearer realm="corral"`)
		}
		refuse(w, err)
		return
	}
	if cred == Ticket {
		r = withoutTicket(r)
	}
	g.next.ServeHTTP(w, withCredential(r, cred, &g.l))
}

// hostAllowed reports whether a Host header names this supervisor.
func (g *guard) hostAllowed(host string) bool {
	def := "80"
	if g.l.TLS {
		def = "443"
	}
	hp, err := splitHost(host, def)
	if err != nil {
		return false
	}
	ip := net.ParseIP(hp.name)
	// Loopback names and addresses cannot be rebound (browsers resolve
	// localhost themselves), and a browser sends the port it connected
	// to: another port only comes through a local proxy, such as
	// supervisor console's gateway, which keeps its own Host.
	if hp.name == "localhost" || (ip != nil && ip.IsLoopback()) {
		return true
	}
	if hp.port == g.port {
		// An address cannot be rebound either: a page that reaches us
		// by one has that address for its origin.
		if hp.name == g.listenHost || (ip != nil && g.anyIP) {
			return true
		}
	}
	// The allowed origins' hosts, and the extra names (on this listener's
	// port when they name none), as the policy is now.
	p := g.a.allowed.Load()
	for o := range p.origins {
		if hp == originHost(o) {
			return true
		}
	}
	for _, h := range p.hosts {
		if h.port == "" {
			h.port = g.port
		}
		if hp == h {
			return true
		}
	}
	return false
}

// originAllowed reports whether a request's Origin may call, and whether it
// is another origin than the supervisor's own (so it needs CORS headers).
// The own origin is the one a page served by the supervisor has: the
// request's scheme and Host, which hostAllowed has checked.
func (g *guard) originAllowed(values []string, host string) (cross, ok bool) {
	if len(values) != 1 {
		return false, false
	}
	o, err := ParseOrigin(values[0])
	if err != nil {
		return false, false
	}
	scheme := "http"
	if g.l.TLS {
		scheme = "https"
	}
	if own, err := ParseOrigin(scheme + "://" + host); err == nil && own == o {
		return false, true
	}
	return true, g.a.allowed.Load().origins[o]
}

// preflight answers a CORS preflight from an allowed origin.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", corsMethods)
	var allowed []string
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, name := range strings.Split(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if corsHeaders[name] {
				allowed = append(allowed, name)
			}
		}
	}
	if len(allowed) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(allowed, ", "))
	}
	// A public page calling a private address asks first (Private
	// Network Access); an allowed origin may.
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// authenticate finds the request's credential. Only one kind is looked at:
// an Authorization header that is wrong is not rescued by a cookie.
func (g *guard) authenticate(r *http.Request) (Credential, *wire.Error) {
	if g.l.Local {
		return Owner, nil
	}
	if auth := r.Header.Values("Authorization"); len(auth) > 0 {
		scheme, token, _ := strings.Cut(auth[0], " ")
		if len(auth) == 1 && strings.EqualFold(scheme, "Bearer") && g.a.tokenMatches(strings.TrimLeft(token, " ")) {
			return Token, nil
		}
		return None, wire.Errorf(wire.CodeUnauthorized, "wrong bearer token (send Authorization: Bearer <token>)")
	}
	if tickets, ok := r.URL.Query()["ticket"]; ok {
		if r.Method != http.MethodGet || len(tickets) != 1 || !g.a.takeTicket(tickets[0]) {
			return None, wire.Errorf(wire.CodeUnauthorized, "ticket unknown, already used or expired (one GET per ticket, within %s of POST %s)", g.a.tickets.ttl, TicketPath)
		}
		return Ticket, nil
	}
	if c, err := r.Cookie(g.l.CookieName()); err == nil {
		if !sameSiteRequest(r) {
			return None, wire.Errorf(wire.CodeUnauthorized, "a session cookie sent from another site's page without an allowed Origin is not accepted")
		}
		if !g.a.sessionValid(c.Value) {
			return None, wire.Errorf(wire.CodeUnauthorized, "session expired or signed out: sign in again (POST %s)", SessionPath)
		}
		return Cookie, nil
	}
	if r.Method == http.MethodPost && r.URL.Path == SessionPath {
		return None, nil // the login-code exchange, checked by SignIn
	}
	if g.a.isPublic(r) {
		return None, nil
	}
	return None, wire.Errorf(wire.CodeUnauthorized,
		"no credential: send the bearer token (Authorization: Bearer <token>), a session cookie or ?ticket= (docs/api.md)")
}

// sameSiteRequest reports whether a cookie-carrying request may be taken as
// the page's own: it has an Origin (which the guard allowed), or the browser
// says it comes from the same origin or from the user (Sec-Fetch-Site), or
// it is no browser's (no Sec-Fetch-Site). Browsers count every port of a
// host as one site, so SameSite=Strict alone would let a page on another
// local port send the cookie with a request that carries no Origin (an
// image, a script).
func sameSiteRequest(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return true
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// withoutTicket returns r without its ticket, so that no handler, error or
// log further on sees it.
func withoutTicket(r *http.Request) *http.Request {
	r2 := r.Clone(r.Context())
	q := r2.URL.Query()
	q.Del("ticket")
	r2.URL.RawQuery = q.Encode()
	r2.RequestURI = r2.URL.RequestURI()
	return r2
}

// refuse answers a request the guard turns away: the JSON error, and the
// connection closed without reading what is left of the body, so a client
// without a credential cannot hold the connection open by trickling one.
// (net/http reads up to 256 KiB of an unread body after the handler, to
// reuse the connection, even when it is to be closed; a read deadline in
// the past ends that read at once.)
func refuse(w http.ResponseWriter, e *wire.Error) {
	ae := api.NewError(e)
	raw, _ := json.Marshal(api.ErrorReply{Error: ae})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(raw)+1))
	h.Set("Connection", "close")
	w.WriteHeader(ae.StatusCode)
	w.Write(append(raw, '\n'))
	rc := http.NewResponseController(w)
	if rc.Flush() == nil {
		rc.SetReadDeadline(time.Now())
	}
}
