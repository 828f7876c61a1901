// Package webauth guards the supervisor's listeners against the network and
// against web pages, and keeps the secrets a browser uses instead of the
// bearer token.
//
// Every request passes a Guard before anything else runs:
//
//  1. Host (TCP only): the Host header must name this supervisor — a
//     loopback name or address, the address it listens on with its port,
//     an allowed origin's host, or an --allow-host entry —
//     so a page on a rebinding DNS name cannot reach it.
//  2. Origin: a request that carries one must come from the supervisor's
//     own origin or from an origin the operator allowed; every other
//     origin is refused and gets no CORS headers. Preflights are answered
//     for allowed origins only, with credentials allowed.
//  3. Credential (TCP only; the unix socket's peer is the state folder's
//     owner): the bearer token (any case of the scheme, RFC 7235), a
//     session cookie, or a single-use ticket in ?ticket= on a GET. A
//     request without one is answered 401 without its body being read,
//     and its connection is closed.
//
// A page exchanges the bearer token or a one-time login code for a session
// cookie (HttpOnly, SameSite=Strict, Secure under TLS), and asks for a
// ticket when it opens an EventSource or a WebSocket, which cannot send
// headers. Secrets are random 256-bit values; only their SHA-256 digests are
// kept, in memory, so a supervisor's restart signs every page out. No
// secret is ever written to a log: errors name the kind of credential, never
// its value.
package webauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// Default lifetimes of the secrets.
const (
	DefaultSessionTTL = 24 * time.Hour
	DefaultTicketTTL  = 30 * time.Second
	DefaultCodeTTL    = 5 * time.Minute
)

// Bounds on the secrets kept at once; past one, the secret closest to its
// expiry is dropped to make room.
const (
	maxSessions = 1024
	maxTickets  = 4096
	maxCodes    = 64
)

// Credential says how a request proved who sent it.
type Credential int

// Credentials, weakest first.
const (
	// None: no credential. Only the login-code exchange gets this far.
	None Credential = iota
	// Ticket: a single-use ticket, for one stream or WebSocket.
	Ticket
	// Cookie: a browser's session cookie.
	Cookie
	// Token: the bearer token.
	Token
	// Owner: the unix socket, which only the state folder's owner can
	// reach.
	Owner
)

func (c Credential) String() string {
	switch c {
	case Ticket:
		return "ticket"
	case Cookie:
		return "session cookie"
	case Token:
		return "bearer token"
	case Owner:
		return "unix socket"
	default:
		return "none"
	}
}

// Config configures an Authority.
type Config struct {
	// Token is the bearer token; without one no TCP request is admitted
	// but a login-code exchange.
	Token string
	// AllowOrigins are the web origins (scheme://host[:port]) whose pages
	// may call the API; see ParseOrigin.
	AllowOrigins []string
	// AllowHosts are more names a TCP request's Host may carry: NAME (with
	// the listening port) or NAME:PORT (behind a proxy).
	AllowHosts []string
	// PublicPaths may be read (GET, HEAD) without a credential: static
	// files such as the web console's page, which a browser must load
	// before it can sign in. An entry ending in "/" is a prefix; any other
	// is one exact path. Host and Origin are checked as on every route.
	PublicPaths []string
	// SessionTTL, TicketTTL and CodeTTL bound the secrets' lives (the
	// Default* values when zero).
	SessionTTL, TicketTTL, CodeTTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Authority holds the bearer token, the policy on origins and hosts, and the
// live session cookies, tickets and login codes of one supervisor. It is
// safe for concurrent use.
type Authority struct {
	token   [sha256.Size]byte
	noToken bool
	allowed atomic.Pointer[allowed] // SetAllowed replaces it while requests read it
	public  []string
	now     func() time.Time

	mu       sync.Mutex
	sessions vault
	tickets  vault
	codes    vault
}

// New returns an Authority for cfg. An origin or host it cannot read is an
// error naming it.
func New(cfg Config) (*Authority, error) {
	a := &Authority{
		token:    sha256.Sum256([]byte(cfg.Token)),
		noToken:  cfg.Token == "",
		public:   cfg.PublicPaths,
		now:      cfg.Now,
		sessions: newVault(orDefault(cfg.SessionTTL, DefaultSessionTTL), maxSessions),
		tickets:  newVault(orDefault(cfg.TicketTTL, DefaultTicketTTL), maxTickets),
		codes:    newVault(orDefault(cfg.CodeTTL, DefaultCodeTTL), maxCodes),
	}
	if a.now == nil {
		a.now = time.Now
	}
	if err := a.SetAllowed(cfg.AllowOrigins, cfg.AllowHosts); err != nil {
		return nil, err
	}
	return a, nil
}

// allowed is the policy on origins and extra host names.
type allowed struct {
	origins map[string]bool
	hosts   []hostPort
}

// SetAllowed replaces the origins whose pages may call (Config.AllowOrigins)
// and the extra host names (Config.AllowHosts), for every listener from the
// next request on (a SIGHUP reload). An origin or host it cannot read is an
// error naming it, and changes nothing. Cookies, tickets and codes already
// handed out stay valid: each request is still checked against the policy.
func (a *Authority) SetAllowed(origins, hosts []string) error {
	p := &allowed{origins: make(map[string]bool)}
	for _, o := range origins {
		norm, err := ParseOrigin(o)
		if err != nil {
			return err
		}
		p.origins[norm] = true
	}
	for _, h := range hosts {
		norm, err := parseAllowHost(h)
		if err != nil {
			return err
		}
		p.hosts = append(p.hosts, norm)
	}
	a.allowed.Store(p)
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Secret is a minted secret and when it stops working.
type Secret struct {
	Value     string
	ExpiresAt time.Time
}

// tokenMatches compares a presented bearer token with the configured one in
// constant time (of the digests, so not even the length leaks).
func (a *Authority) tokenMatches(got string) bool {
	if a.noToken {
		return false
	}
	d := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(d[:], a.token[:]) == 1
}

// credKey is the request context key of the Credential.
type credKey struct{}

// listenerKey is the request context key of the Listener a request came in
// on.
type listenerKey struct{}

// CredentialOf returns how r was authenticated by a Guard (None when it
// passed none).
func CredentialOf(r *http.Request) Credential {
	c, _ := r.Context().Value(credKey{}).(Credential)
	return c
}

func withCredential(r *http.Request, c Credential, l *Listener) *http.Request {
	ctx := context.WithValue(r.Context(), credKey{}, c)
	return r.WithContext(context.WithValue(ctx, listenerKey{}, l))
}

func listenerOf(r *http.Request) *Listener {
	l, _ := r.Context().Value(listenerKey{}).(*Listener)
	if l == nil {
		return &Listener{}
	}
	return l
}

// Errors the exchanges return; the HTTP edge writes them as they are.
var (
	errSignInWith = wire.Errorf(wire.CodeUnauthorized,
		"sign in with the bearer token (Authorization: Bearer <token>) or a login code ({\"code\":\"...\"})")
	errBadCode = wire.Errorf(wire.CodeUnauthorized,
		"login code unknown, already used or expired: ask for a new one (supervisor console)")
)

// SignIn starts a browser session: for a caller with the bearer token (or on
// the unix socket) when code is empty, else for whoever presents a live
// login code, which is used up. It sets the session cookie on w and returns
// when the session ends.
func (a *Authority) SignIn(w http.ResponseWriter, r *http.Request, code string) (time.Time, error) {
	now := a.now()
	a.mu.Lock()
	switch {
	case code != "":
		if !a.codes.take(now, code) {
			a.mu.Unlock()
			return time.Time{}, errBadCode
		}
	case CredentialOf(r) < Token:
		a.mu.Unlock()
		return time.Time{}, errSignInWith
	}
	s := a.sessions.add(now)
	a.mu.Unlock()
	l := listenerOf(r)
	http.SetCookie(w, &http.Cookie{
		Name:     l.CookieName(),
		Value:    s.Value,
		Path:     "/",
		MaxAge:   int(s.ExpiresAt.Sub(now) / time.Second),
		HttpOnly: true,
		Secure:   l.TLS,
		SameSite: http.SameSiteStrictMode,
	})
	return s.ExpiresAt, nil
}

// SignOut ends the session of the cookie r carries, if any, and tells the
// browser to drop the cookie.
func (a *Authority) SignOut(w http.ResponseWriter, r *http.Request) {
	l := listenerOf(r)
	if c, err := r.Cookie(l.CookieName()); err == nil {
		a.mu.Lock()
		a.sessions.remove(c.Value)
		a.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{
		Name:     l.CookieName(),
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		HttpOnly: true,
		Secure:   l.TLS,
		SameSite: http.SameSiteStrictMode,
	})
}

// NewTicket mints a single-use ticket for one GET (an event stream or a
// terminal WebSocket) for a caller with a session cookie, the bearer token,
// or the unix socket.
func (a *Authority) NewTicket(r *http.Request) (Secret, error) {
	if CredentialOf(r) < Cookie {
		return Secret{}, wire.Errorf(wire.CodeForbidden, "a ticket is for a caller with a session cookie or the bearer token")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tickets.add(a.now()), nil
}

// NewLoginCode mints a one-time login code, which a page exchanges for a
// session cookie (SignIn). Only the owner mints them: on the unix socket or
// with the bearer token.
func (a *Authority) NewLoginCode(r *http.Request) (Secret, error) {
	if CredentialOf(r) < Token {
		return Secret{}, wire.Errorf(wire.CodeForbidden, "a login code is minted on the unix socket or with the bearer token")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.codes.add(a.now()), nil
}

// sessionValid reports whether v is a live session cookie.
func (a *Authority) sessionValid(v string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions.valid(a.now(), v)
}

// takeTicket uses up ticket v, reporting whether it was live.
func (a *Authority) takeTicket(v string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tickets.take(a.now(), v)
}

// isPublic reports whether r may go without a credential (PublicPaths).
func (a *Authority) isPublic(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range a.public {
		if r.URL.Path == p || (strings.HasSuffix(p, "/") && p != "/" && strings.HasPrefix(r.URL.Path, p)) {
			return true
		}
	}
	return false
}

// quote shows a header value an attacker controls in an error, bounded.
func quote(s string) string {
	const max = 100
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", strings.ToValidUTF8(s, "?"))
}
