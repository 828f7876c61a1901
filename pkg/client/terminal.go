package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// DefaultTermID is the terminal a client attaches to when it names none.
const DefaultTermID = "main"

// TermOptions say which terminal of a session to attach to, and how.
type TermOptions struct {
	// TermID names the terminal (DefaultTermID when empty). Every client
	// of one id sees the same program.
	TermID string
	// ReadOnly asks for a viewer's seat. Otherwise the client asks to own
	// the terminal, and is granted read-only while another client owns it.
	ReadOnly bool
	// Cols and Rows size a new terminal, and resize a running one when
	// this client becomes its owner. Zero means the supervisor's default
	// (80×24).
	Cols, Rows uint16
	// Command is the program a new terminal runs (default: the user's
	// shell in the session's folder). A running terminal ignores it.
	Command []string
}

// TermExit is how a terminal's program ended: its exit status, or -1 and
// the signal's name ("SIGKILL") when a signal ended it.
type TermExit struct {
	Code   int
	Signal string
}

// TermEvent is one thing a terminal's stream delivers; exactly one field is
// set.
type TermEvent struct {
	// Output is the program's output. It is valid until the next call to
	// Next.
	Output []byte
	// Notice is an input or resize the supervisor refused (a read-only
	// client typing, say). The stream goes on.
	Notice *wire.Error
	// Exit ends the stream: the program ended.
	Exit *TermExit
}

// Terminal is one attachment to a session's terminal over a WebSocket.
// Next must be called from one goroutine at a time; Input, Resize and
// Close may be called from any.
type Terminal struct {
	conn   *websocket.Conn
	opened api.TermFrame
	buf    []byte
	end    error // what Next returns once the stream ended
}

// AttachTerminal attaches to a terminal of session id, starting the
// session's runner and the terminal's program when needed.
func (c *Client) AttachTerminal(ctx context.Context, id string, opts TermOptions) (*Terminal, error) {
	termID := opts.TermID
	if termID == "" {
		termID = DefaultTermID
	}
	q := url.Values{}
	q.Set("role", api.RoleOwner)
	if opts.ReadOnly {
		q.Set("role", api.RoleReadOnly)
	}
	if opts.Cols > 0 {
		q.Set("cols", strconv.Itoa(int(opts.Cols)))
	}
	if opts.Rows > 0 {
		q.Set("rows", strconv.Itoa(int(opts.Rows)))
	}
	for _, arg := range opts.Command {
		q.Add("command", arg)
	}
	u := c.base + api.Version + "/sessions/" + url.PathEscape(id) + "/terminals/" + url.PathEscape(termID) + "?" + q.Encode()
	hdr := http.Header{}
	if c.token != "" {
		hdr.Set("Authorization", "Bearer "+c.token)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			raw, _ := io.ReadAll(resp.Body)
			return nil, replyError(resp.StatusCode, raw)
		}
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, wire.Errorf(wire.CodeUnavailable, "no supervisor answers on %s (start one with: supervisor serve): %v", c.where, err)
	}
	conn.SetReadLimit(api.MaxTermFrame + 64<<10)
	t := &Terminal{conn: conn}
	first, err := t.readFrame(ctx)
	if err == nil && first.Type != api.FrameOpened {
		err = wire.Errorf(wire.CodeProtocol, "terminal stream began with a %q frame, want opened", first.Type)
	}
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("attach terminal %s of session %s: %w", termID, id, err)
	}
	t.opened = first
	return t, nil
}

// readFrame reads the opening text frame.
func (t *Terminal) readFrame(ctx context.Context) (api.TermFrame, error) {
	var f api.TermFrame
	typ, p, err := t.conn.Read(ctx)
	if err != nil {
		return f, err
	}
	if typ != websocket.MessageText {
		return f, wire.Errorf(wire.CodeProtocol, "terminal stream began with output, want the opened frame")
	}
	if err := json.Unmarshal(p, &f); err != nil {
		return f, wire.Errorf(wire.CodeProtocol, "terminal frame %.80q: %v", p, err)
	}
	return f, nil
}

// Role is the role the terminal granted: api.RoleOwner or api.RoleReadOnly.
func (t *Terminal) Role() string { return t.opened.Role }

// Size is the terminal's size when this client attached.
func (t *Terminal) Size() (cols, rows uint16) { return t.opened.Cols, t.opened.Rows }

// TermID is the terminal this client is attached to.
func (t *Terminal) TermID() string { return t.opened.TermID }

// ClientID names this attachment in the supervisor's logs.
func (t *Terminal) ClientID() string { return t.opened.ClientID }

// Next returns the stream's next event. After the Exit event it returns
// io.EOF. A stream the supervisor ended returns its *wire.Error: code
// runner_crashed when the runner died, timeout when this client fell too
// far behind and was cut (attach again to resync), unavailable when the
// session or the supervisor is going away.
func (t *Terminal) Next(ctx context.Context) (TermEvent, error) {
	if t.end != nil {
		return TermEvent{}, t.end
	}
	for {
		typ, r, err := t.conn.Reader(ctx)
		if err != nil {
			t.end = connEnded(err)
			return TermEvent{}, t.end
		}
		if t.buf, err = readAllInto(t.buf[:0], r); err != nil {
			t.end = connEnded(err)
			return TermEvent{}, t.end
		}
		if typ == websocket.MessageBinary {
			if len(t.buf) == 0 {
				continue
			}
			return TermEvent{Output: t.buf}, nil
		}
		var f api.TermFrame
		if err := json.Unmarshal(t.buf, &f); err != nil {
			t.end = wire.Errorf(wire.CodeProtocol, "terminal frame %.80q: %v", t.buf, err)
			return TermEvent{}, t.end
		}
		switch f.Type {
		case api.FrameExit:
			t.end = io.EOF
			ex := &TermExit{Code: -1, Signal: f.Signal}
			if f.ExitCode != nil {
				ex.Code = *f.ExitCode
			}
			return TermEvent{Exit: ex}, nil
		case api.FrameError:
			e := &wire.Error{Code: f.Code, Message: f.Message}
			if f.Fatal {
				t.end = e
				return TermEvent{}, e
			}
			return TermEvent{Notice: e}, nil
		}
		// Frames of later versions are skipped.
	}
}

// readAllInto appends r's contents to buf.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// connEnded explains a connection that ended without an exit or error
// frame.
func connEnded(err error) error {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return wire.Errorf(wire.CodeUnavailable, "the supervisor closed the terminal stream (status %d %s)", int(ce.Code), ce.Reason)
	}
	return wire.Errorf(wire.CodeUnavailable, "terminal stream lost: %v", err)
}

// Input types p into the terminal. Only the owner's input reaches the
// program; a read-only client's is refused with a Notice event.
func (t *Terminal) Input(ctx context.Context, p []byte) error {
	if err := t.conn.Write(ctx, websocket.MessageBinary, p); err != nil {
		return fmt.Errorf("terminal input: %w", err)
	}
	return nil
}

// Resize gives the terminal a new size. Only the owner can; a read-only
// client's resize is refused with a Notice event.
func (t *Terminal) Resize(ctx context.Context, cols, rows uint16) error {
	raw, err := json.Marshal(api.TermFrame{Type: api.FrameResize, Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	if err := t.conn.Write(ctx, websocket.MessageText, raw); err != nil {
		return fmt.Errorf("terminal resize: %w", err)
	}
	return nil
}

// Close detaches this client; the terminal's program keeps running for its
// other clients and later attaches.
func (t *Terminal) Close() error {
	err := t.conn.Close(websocket.StatusNormalClosure, "detach")
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
