package daemon

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const pageOrigin = "http://localhost:5173"

// tcpClient makes raw requests to a daemon's TCP listener, as a browser
// would: each with the headers the test gives.
type tcpClient struct {
	t    *testing.T
	base string
	hc   *http.Client
}

type answer struct {
	code int
	hdr  http.Header
	body []byte
}

func (c *tcpClient) do(method, path, body string, hdr ...string) answer {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, hdr: resp.Header, body: raw}
}

func (a answer) errorCode(t *testing.T) wire.Code {
	t.Helper()
	var r api.ErrorReply
	if err := json.Unmarshal(a.body, &r); err != nil || r.Error == nil || r.Error.StatusCode != a.code {
		t.Fatalf("not the JSON error: %d %s", a.code, a.body)
	}
	return r.Error.Code
}

func (a answer) cookie(t *testing.T) *http.Cookie {
	t.Helper()
	resp := http.Response{Header: a.hdr}
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "corral_session") || strings.HasPrefix(c.Name, "__Host-corral_session") {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", a.hdr)
	return nil
}

// debugLog is a logger that keeps everything, at debug level, as JSON.
func debugLog(buf *testio.Buffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.DebugLevel))
}

// TestBrowserAccessEndToEnd walks a page's way in: a login code minted on
// the unix socket, exchanged for a cookie from an allowed origin, a session
// created and listed with the cookie, its events and its terminal opened
// with tickets. Another origin and another Host are refused on every route,
// and no secret, good or forged, reaches the log.
func TestBrowserAccessEndToEnd(t *testing.T) {
	state := t.TempDir()
	var logBuf testio.Buffer
	where := serve(t, state, func(c *Config) {
		c.Listen = "127.0.0.1:0"
		c.AllowOrigins = []string{pageOrigin}
		c.Logger = debugLog(&logBuf)
	})
	token, err := ReadToken(filepath.Join(state, TokenName))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tcp := &tcpClient{t: t, base: where.URL, hc: &http.Client{}}
	defer tcp.hc.CloseIdleConnections()
	secrets := []string{token}

	// The owner mints a login code on the socket.
	owner, _ := client.ForState(state)
	code, err := owner.NewLoginCode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, code.Code)

	// The page exchanges it, from its origin.
	a := tcp.do("POST", "/v1/auth/session", `{"code":"`+code.Code+`"}`, "Origin", pageOrigin, "Content-Type", "application/json")
	if a.code != 200 || a.hdr.Get("Access-Control-Allow-Origin") != pageOrigin || a.hdr.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("exchange: %d %v %s", a.code, a.hdr, a.body)
	}
	ck := a.cookie(t)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure {
		t.Fatalf("cookie %+v", ck)
	}
	cookie := ck.Name + "=" + ck.Value
	secrets = append(secrets, ck.Value)
	if a := tcp.do("POST", "/v1/auth/session", `{"code":"`+code.Code+`"}`, "Origin", pageOrigin); a.code != 401 {
		t.Fatalf("a code used twice: %d", a.code)
	}

	// The cookie works on every route from the page's origin.
	a = tcp.do("POST", "/v1/sessions", `{"engine":"script"}`, "Origin", pageOrigin, "Cookie", cookie, "Content-Type", "application/json")
	if a.code != 201 {
		t.Fatalf("create with the cookie: %d %s", a.code, a.body)
	}
	var created api.SessionReply
	json.Unmarshal(a.body, &created)
	id := created.Session.ID
	if a := tcp.do("GET", "/v1/sessions", "", "Origin", pageOrigin, "Cookie", cookie); a.code != 200 {
		t.Fatalf("list with the cookie: %d %s", a.code, a.body)
	}

	// Tickets open one stream each.
	ticket := func() string {
		a := tcp.do("POST", "/v1/auth/ticket", "", "Origin", pageOrigin, "Cookie", cookie)
		var r api.TicketReply
		if a.code != 200 || json.Unmarshal(a.body, &r) != nil || r.Ticket == "" {
			t.Fatalf("ticket: %d %s", a.code, a.body)
		}
		secrets = append(secrets, r.Ticket)
		return r.Ticket
	}
	tk := ticket()
	a = tcp.do("GET", "/v1/sessions/"+id+"/events?follow=false&ticket="+tk, "", "Origin", pageOrigin)
	if a.code != 200 || !strings.Contains(string(a.body), `"type":"sessionStarted"`) {
		t.Fatalf("events with a ticket: %d %s", a.code, a.body)
	}
	if a := tcp.do("GET", "/v1/sessions/"+id+"/events?follow=false&ticket="+tk, ""); a.code != 401 {
		t.Fatalf("a ticket used twice: %d", a.code)
	}
	wsURL := "ws" + strings.TrimPrefix(where.URL, "http") + "/v1/sessions/" + id + "/terminals/main?role=owner&ticket="
	conn, _, err := websocket.Dial(ctx, wsURL+ticket(), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {pageOrigin}}})
	if err != nil {
		t.Fatalf("terminal with a ticket: %v", err)
	}
	typ, p, err := conn.Read(ctx)
	if err != nil || typ != websocket.MessageText || !strings.Contains(string(p), `"opened"`) {
		t.Fatalf("first frame %v %q %v", typ, p, err)
	}
	conn.Close(websocket.StatusNormalClosure, "")

	// Another origin is refused on every route, with or without a
	// credential, including the WebSocket; so is another Host.
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/health", ""},
		{"GET", "/v1/sessions", ""},
		{"POST", "/v1/sessions", `{"engine":"script"}`},
		{"GET", "/v1/sessions/" + id, ""},
		{"DELETE", "/v1/sessions/" + id, ""},
		{"POST", "/v1/sessions/" + id + "/commands", `{"cmd":"status"}`},
		{"GET", "/v1/sessions/" + id + "/events?follow=false", ""},
		{"POST", "/v1/auth/session", ""},
		{"DELETE", "/v1/auth/session", ""},
		{"POST", "/v1/auth/ticket", ""},
		{"POST", "/v1/auth/code", ""},
		{"OPTIONS", "/v1/sessions", ""},
		{"GET", "/no/such/route", ""},
	}
	for _, r := range routes {
		for _, hdr := range [][]string{
			{"Origin", "http://evil.example", "Cookie", cookie},
			{"Origin", "http://evil.example", "Authorization", "Bearer " + token},
			{"Origin", "http://localhost:5174", "Cookie", cookie, "Access-Control-Request-Method", "POST"},
			{"Host", "evil.example:" + strings.Split(where.TCPAddr, ":")[1], "Authorization", "Bearer " + token},
		} {
			a := tcp.do(r.method, r.path, r.body, hdr...)
			if a.code != 403 || a.errorCode(t) != wire.CodeForbidden || a.hdr.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("%s %s with %q: %d %v %s", r.method, r.path, hdr, a.code, a.hdr, a.body)
			}
		}
	}
	_, resp, err := websocket.Dial(ctx, wsURL+ticket(), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("terminal from another origin: %v %v", resp, err)
	}
	// The session is still there: the refused DELETEs did nothing.
	if _, err := owner.Session(ctx, id); err != nil {
		t.Fatal(err)
	}

	// Forged credentials are refused, and kept out of the log too.
	forged := []string{"forged-bearer-0123456789", "forged-cookie-0123456789", "forged-ticket-0123456789", "forged-code-0123456789"}
	secrets = append(secrets, forged...)
	for _, a := range []answer{
		tcp.do("GET", "/v1/sessions", "", "Authorization", "Bearer "+forged[0]),
		tcp.do("GET", "/v1/sessions", "", "Cookie", ck.Name+"="+forged[1]),
		tcp.do("GET", "/v1/sessions/"+id+"/events?ticket="+forged[2], ""),
		tcp.do("POST", "/v1/auth/session", `{"code":"`+forged[3]+`"}`),
	} {
		if a.code != 401 || a.errorCode(t) != wire.CodeUnauthorized {
			t.Fatalf("forged credential: %d %s", a.code, a.body)
		}
	}

	// Signing out ends the cookie.
	if a := tcp.do("DELETE", "/v1/auth/session", "", "Origin", pageOrigin, "Cookie", cookie); a.code != 200 {
		t.Fatalf("sign out: %d %s", a.code, a.body)
	}
	if a := tcp.do("GET", "/v1/sessions", "", "Origin", pageOrigin, "Cookie", cookie); a.code != 401 {
		t.Fatalf("cookie after sign-out: %d", a.code)
	}

	log := logBuf.String()
	if !strings.Contains(log, "terminal attached") {
		t.Fatalf("the log is not at debug level:\n%s", log)
	}
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("a secret (%.6s…) is in the log", s)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and localhost and its key,
// and returns their files and a pool trusting the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "corral test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	state := t.TempDir()
	cert, key, pool := selfSigned(t)
	where := serve(t, state, func(c *Config) {
		c.Listen = "127.0.0.1:0"
		c.TLSCert, c.TLSKey = cert, key
	})
	if !strings.HasPrefix(where.URL, "https://") {
		t.Fatalf("URL %q", where.URL)
	}
	token, _ := ReadToken(filepath.Join(state, TokenName))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	tcp := &tcpClient{t: t, base: where.URL, hc: &http.Client{Transport: tr}}
	a := tcp.do("POST", "/v1/auth/session", "", "Authorization", "Bearer "+token)
	if a.code != 200 {
		t.Fatalf("sign in over TLS: %d %s", a.code, a.body)
	}
	if ck := a.cookie(t); !ck.Secure || !strings.HasPrefix(ck.Name, "__Host-") {
		t.Fatalf("cookie under TLS %+v", ck)
	}
	c, err := client.New(client.Options{BaseURL: where.URL, Token: token, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Plain HTTP on the TLS port gets nothing.
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + where.TCPAddr + "/v1/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered on the TLS listener")
		}
	}
}

func TestTLSNeedsCertAndKey(t *testing.T) {
	cert, _, _ := selfSigned(t)
	for _, tc := range []struct{ cert, key, says string }{
		{cert, "", "both"},
		{cert, filepath.Join(t.TempDir(), "absent.pem"), "TLS certificate"},
	} {
		_, err := listenTCP("127.0.0.1:0", tc.cert, tc.key, 0)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("cert %q key %q: %v", tc.cert, tc.key, err)
		}
	}
}

// TestBodyDeadline: a client that sends its body too slowly is cut off,
// while a request whose body is read lives on past the deadline (an event
// stream, a command waiting on a runner).
func TestBodyDeadline(t *testing.T) {
	const timeout = 200 * time.Millisecond
	release := make(chan struct{})
	h := bodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		// The body is read: wait well past the deadline, then answer.
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("done"))
	}), timeout)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()

	// A slow body: the read fails once the deadline passes.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("slow body: HTTP %d", resp.StatusCode)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a slow body was waited on for a minute")
	}

	// A whole body: the handler outlives the deadline with its context
	// alive.
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String(), "text/plain", strings.NewReader("whole"))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "done" {
				err = errors.New("answered " + string(b))
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("answered before release: %v", err)
	case <-time.After(3 * timeout):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}
