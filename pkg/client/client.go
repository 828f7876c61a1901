// Package client is the Go client of a Corral supervisor's HTTP API
// (docs/api.md): create, list and delete sessions, send them control
// commands, follow their events, and attach to their terminals.
//
// A client reaches the supervisor over the unix socket in its state folder
// ([ForState], no token needed: the socket is its owner's alone), or over
// TCP with a bearer token ([New] with Options.BaseURL and Options.Token).
//
// Every failure the supervisor reports comes back as a *wire.Error, whose
// Code callers branch on with errors.Is and the sentinels of pkg/wire
// (wire.ErrNotFound, wire.ErrConflict, ...); a supervisor that does not
// answer is wire.ErrUnavailable.
//
// Event streams ([Client.Events]) deliver a session's events in seq order.
// A followed stream reconnects on its own when its connection is lost or
// the supervisor restarts, and resumes after the last event it returned, so
// a caller sees each event exactly once. [Client.Feed] follows every
// session (and their lifecycle) on one stream, resuming from its cursor the
// same way, and [Client.Wait] returns when a session's turn ends, it needs
// a person, or it is idle. The request and reply bodies are the types of
// pkg/api and pkg/wire; api/schema.json describes them all.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/unixsock"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// SocketName is the supervisor's socket in its state folder.
const SocketName = "supervisor.sock"

// StateDir resolves the state folder: flag when set, else $CORRAL_STATE,
// else $XDG_STATE_HOME/corral, else ~/.local/state/corral.
func StateDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if v := os.Getenv("CORRAL_STATE"); v != "" {
		return filepath.Abs(v)
	}
	if v := os.Getenv("XDG_STATE_HOME"); v != "" && filepath.IsAbs(v) {
		return filepath.Join(v, "corral"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state folder: no --state, CORRAL_STATE or home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "corral"), nil
}

// Options say how to reach a supervisor: Socket, or BaseURL with Token.
type Options struct {
	// Socket is the path of the supervisor's unix socket.
	Socket string
	// BaseURL is an http:// or https:// address of a supervisor serving
	// TCP, used when Socket is empty.
	BaseURL string
	// Token is the bearer token BaseURL needs.
	Token string
	// HTTPClient replaces the default transport (its Transport is used
	// as it is for BaseURL; for Socket a dialer is set on a clone).
	HTTPClient *http.Client
}

// Client is a supervisor API client. It is safe for concurrent use.
type Client struct {
	hc    *http.Client
	base  string
	token string
	where string // for error messages
}

// New returns a client for opts.
func New(opts Options) (*Client, error) {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c := &Client{token: opts.Token}
	switch {
	case opts.Socket != "":
		tr, ok := http.DefaultTransport.(*http.Transport)
		if !ok {
			return nil, errors.New("client: default transport is not an *http.Transport")
		}
		tr = tr.Clone()
		socket := opts.Socket
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return unixsock.Dial(ctx, socket) // a path of any length
		}
		clone := *hc
		clone.Transport = tr
		hc = &clone
		c.base = "http://supervisor"
		c.where = socket
	case opts.BaseURL != "":
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("client: base URL %q: want http://host:port", opts.BaseURL)
		}
		c.base = strings.TrimSuffix(opts.BaseURL, "/")
		c.where = c.base
	default:
		return nil, errors.New("client: a socket or a base URL is required")
	}
	c.hc = hc
	return c, nil
}

// ForState returns a client for the supervisor of a state folder.
func ForState(state string) (*Client, error) {
	return New(Options{Socket: filepath.Join(state, SocketName)})
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+api.Version+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

func (c *Client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, err
		}
		return nil, wire.Errorf(wire.CodeUnavailable, "no supervisor answers on %s (start one with: supervisor serve): %v", c.where, err)
	}
	return resp, nil
}

// call sends a request and decodes a successful JSON body into out; a
// failed one becomes a *wire.Error.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode >= 300 {
		return replyError(resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode reply of %s %s: %w", method, path, err)
	}
	return nil
}

// replyError rebuilds the supervisor's error from a failed response: the
// body's code, or, for a body without one, the code of the status.
func replyError(status int, raw []byte) error {
	var r api.ErrorReply
	if json.Unmarshal(raw, &r) == nil && r.Error != nil && r.Error.Code != "" {
		return r.Error.Wire()
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return &wire.Error{Code: api.CodeFor(status), Message: fmt.Sprintf("supervisor answered %d: %s", status, msg)}
}

// Health checks the supervisor answers.
func (c *Client) Health(ctx context.Context) (*api.HealthReply, error) {
	var h api.HealthReply
	if err := c.call(ctx, http.MethodGet, "/health", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// CreateSession creates a session and returns it once its runner is live.
func (c *Client) CreateSession(ctx context.Context, spec wire.Spec) (*api.Session, error) {
	var r api.SessionReply
	if err := c.call(ctx, http.MethodPost, "/sessions", spec, &r); err != nil {
		return nil, err
	}
	return r.Session, nil
}

// Sessions lists every session, most recently updated first.
func (c *Client) Sessions(ctx context.Context) ([]api.Session, error) {
	var r api.SessionsReply
	if err := c.call(ctx, http.MethodGet, "/sessions", nil, &r); err != nil {
		return nil, err
	}
	return r.Sessions, nil
}

// Session describes one session.
func (c *Client) Session(ctx context.Context, id string) (*api.Session, error) {
	var r api.SessionReply
	if err := c.call(ctx, http.MethodGet, "/sessions/"+url.PathEscape(id), nil, &r); err != nil {
		return nil, err
	}
	return r.Session, nil
}

// DeleteSession stops a session's runner and removes the session.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/sessions/"+url.PathEscape(id), nil, nil)
}

// Command runs a control command. The reply is returned when the runner
// accepted it; a refusal is returned as its *wire.Error. The command
// carries the requestId ctx carries (command.WithRequestID), or a new
// random one: a caller that retries a command after an error that leaves
// its fate unknown (a timeout, a lost connection) passes the same
// requestId again, and the session acts once.
func (c *Client) Command(ctx context.Context, id string, req command.Request) (*wire.Reply, error) {
	requestID := command.RequestIDFrom(ctx)
	if requestID == "" {
		requestID = NewRequestID()
	}
	body, err := command.MarshalWithID(req, requestID)
	if err != nil {
		return nil, err
	}
	var r wire.Reply
	if err := c.call(ctx, http.MethodPost, "/sessions/"+url.PathEscape(id)+"/commands", json.RawMessage(body), &r); err != nil {
		return nil, err
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Run runs a control command and returns its result, typed as the command
// says: Run(ctx, c, id, command.Send{Text: "hi"}) returns a
// command.SendResult.
func Run[R any](ctx context.Context, c *Client, id string, req command.Call[R]) (R, error) {
	reply, err := c.Command(ctx, id, req)
	if err != nil {
		var zero R
		return zero, err
	}
	return command.Result(req, reply)
}
