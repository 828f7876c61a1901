// Package gateway is the loopback door `supervisor console` opens to a
// supervisor that serves only its unix socket (or a TCP address behind a
// bearer token): a listener on 127.0.0.1 that admits one browser with a
// one-time code and forwards its requests, the console's pages, API calls,
// event streams and terminal WebSockets alike, to the supervisor.
//
// The code is printed once, in the URL, to the person who ran the command
// (docs/console.md). The browser trades it at /login for an HttpOnly,
// SameSite=Strict cookie; the code then no longer works. Every request must
// carry the cookie and name the listener itself as its Host (no DNS
// rebinding), and a request with an Origin must come from that same
// origin. The gateway keeps no state of the supervisor's: restarting the
// supervisor behind it is invisible to the page but for a pause.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/unixsock"
	"go.uber.org/zap"
)

// Upstream says how to reach the supervisor.
type Upstream struct {
	// Socket is the supervisor's unix socket.
	Socket string
	// BaseURL (http://host:port) and Token reach a supervisor over TCP
	// when Socket is empty.
	BaseURL string
	Token   string
}

// Config configures a Gateway.
type Config struct {
	// Listen is a loopback address (default 127.0.0.1:0: a free port).
	Listen   string
	Upstream Upstream
	Logger   *zap.Logger
}

// Gateway is a started loopback listener; Serve runs it.
type Gateway struct {
	ln     net.Listener
	port   string
	cookie string // the cookie's name, per port: cookies ignore ports
	proxy  *httputil.ReverseProxy
	log    *zap.Logger

	mu       sync.Mutex
	code     [32]byte // sha256 of the one-time code
	codeUsed bool
	rawCode  string                // for URL; emptied once used
	sessions map[[32]byte]struct{} // sha256 of every cookie handed out
}

// ErrNotLoopback is returned for a Listen address off the loopback.
var ErrNotLoopback = errors.New("the console gateway listens on a loopback address only")

// New opens the listener and makes the one-time code.
func New(cfg Config) (*Gateway, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("listen address %q: %w", addr, ErrNotLoopback)
	}
	proxy, err := newProxy(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	code, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console listener: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	g := &Gateway{
		ln:       ln,
		port:     port,
		cookie:   "corral_console_" + port,
		proxy:    proxy,
		log:      log,
		code:     sha256.Sum256([]byte(code)),
		rawCode:  code,
		sessions: map[[32]byte]struct{}{},
	}
	proxy.ErrorHandler = g.upstreamDown
	return g, nil
}

// URL is the address to open once: it carries the one-time code, and
// session, when not empty, is the session the console shows first.
func (g *Gateway) URL(session string) string {
	q := url.Values{"code": {g.rawCode}}
	if session != "" {
		q.Set("session", session)
	}
	return "http://" + net.JoinHostPort("127.0.0.1", g.port) + "/login?" + q.Encode()
}

// Addr is the listener's address.
func (g *Gateway) Addr() net.Addr { return g.ln.Addr() }

// Serve answers requests until ctx ends, then closes the listener and
// waits (a few seconds at most) for requests under way.
func (g *Gateway) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(g.log.Named("http")),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	}()
	err := srv.Serve(g.ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close closes the listener without serving (for a Gateway never served).
func (g *Gateway) Close() error { return g.ln.Close() }

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.ownHost(r.Host) {
		// A page elsewhere reached us under another name (DNS rebinding).
		http.Error(w, "wrong Host: open the console through the address supervisor console printed", http.StatusMisdirectedRequest)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/login" {
		g.login(w, r)
		return
	}
	c, err := r.Cookie(g.cookie)
	if err != nil || !g.validSession(c.Value) {
		g.unauthorized(w, r)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// ownHost reports whether host names this listener: a loopback name and
// our port.
func (g *Gateway) ownHost(host string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != g.port {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (g *Gateway) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	target := "/"
	if id := r.URL.Query().Get("session"); id != "" {
		if !sessiondir.ValidID(id) {
			http.Error(w, "session: not a session id", http.StatusBadRequest)
			return
		}
		target = "/#/sessions/" + id
	}
	// A browser that has signed in already (a second open of the link)
	// goes straight in.
	if c, err := r.Cookie(g.cookie); err == nil && g.validSession(c.Value) {
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	secret, err := g.redeem(r.URL.Query().Get("code"))
	if err != nil {
		g.log.Info("console sign-in refused", zap.Error(err))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "%v. Run supervisor console again for a new link.\n", err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     g.cookie,
		Value:    secret,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// redeem trades the one-time code for a new cookie value.
func (g *Gateway) redeem(code string) (string, error) {
	sum := sha256.Sum256([]byte(code))
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.codeUsed {
		return "", errors.New("this sign-in link was used already")
	}
	if code == "" || subtle.ConstantTimeCompare(sum[:], g.code[:]) != 1 {
		return "", errors.New("wrong sign-in code")
	}
	secret, err := randomHex(32)
	if err != nil {
		return "", err
	}
	g.codeUsed = true
	g.rawCode = ""
	g.sessions[sha256.Sum256([]byte(secret))] = struct{}{}
	return secret, nil
}

func (g *Gateway) validSession(v string) bool {
	if v == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.sessions[sha256.Sum256([]byte(v))]
	return ok
}

func (g *Gateway) unauthorized(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, `{"ok":false,"error":{"message":"not signed in to the console: open the link supervisor console printed","code":"unauthorized","statusCode":401}}`)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintln(w, "Not signed in. Open the link that supervisor console printed (it works once), or run supervisor console again.")
}

// upstreamDown answers when the supervisor cannot be reached: the page
// retries, so a restart behind the gateway shows as a pause.
func (g *Gateway) upstreamDown(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	g.log.Debug("supervisor unreachable", zap.Error(err))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"ok":false,"error":{"message":%s,"code":"unavailable","statusCode":503}}`+"\n",
		strconv.Quote("the supervisor is not answering: "+err.Error()))
}

func newProxy(up Upstream) (*httputil.ReverseProxy, error) {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("gateway: default transport is not an *http.Transport")
	}
	tr := base.Clone()
	var target *url.URL
	switch {
	case up.Socket != "":
		socket := up.Socket
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return unixsock.Dial(ctx, socket) // a path of any length
		}
		target = &url.URL{Scheme: "http", Host: "supervisor"}
	case up.BaseURL != "":
		u, err := url.Parse(up.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("gateway: upstream %q: want http://host:port", up.BaseURL)
		}
		target = &url.URL{Scheme: u.Scheme, Host: u.Host}
	default:
		return nil, errors.New("gateway: an upstream socket or URL is required")
	}
	token := up.Token
	return &httputil.ReverseProxy{
		Transport: tr,
		// Event streams are flushed as they come (ReverseProxy does so
		// for text/event-stream; NDJSON needs it said).
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The supervisor checks a WebSocket's Origin against Host:
			// keep the browser's, which the gateway has checked.
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Del("Authorization")
			if token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
	}, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
