package term

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRolesGranted(t *testing.T) {
	tests := []struct {
		name  string
		steps []string // "attach ID ROLE" or "close ID"
		want  map[string]Role
	}{
		{
			name:  "first owner request wins",
			steps: []string{"attach a owner", "attach b owner", "attach c read-only"},
			want:  map[string]Role{"a": RoleOwner, "b": RoleReadOnly, "c": RoleReadOnly},
		},
		{
			name:  "empty role is read-only and leaves the seat free",
			steps: []string{"attach a ", "attach b owner"},
			want:  map[string]Role{"a": RoleReadOnly, "b": RoleOwner},
		},
		{
			name:  "owner seat frees on detach",
			steps: []string{"attach a owner", "attach b owner", "close a", "attach c owner", "attach d owner"},
			want:  map[string]Role{"b": RoleReadOnly, "c": RoleOwner, "d": RoleReadOnly},
		},
		{
			name:  "read-only clients are not promoted",
			steps: []string{"attach a owner", "attach b read-only", "close a"},
			want:  map[string]Role{"b": RoleReadOnly},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHub(t, HubOptions{})
			clients := map[string]*Client{}
			for _, step := range tt.steps {
				verb, rest, _ := strings.Cut(step, " ")
				switch verb {
				case "attach":
					id, role, _ := strings.Cut(rest, " ")
					c, g, _ := attach(t, h, AttachRequest{TermID: "t", ClientID: id, Role: Role(role), Command: []string{"cat"}})
					if g.Role != c.Role() {
						t.Fatalf("grant role %q but client role %q", g.Role, c.Role())
					}
					clients[id] = c
				case "close":
					clients[rest].Close()
					delete(clients, rest)
				}
			}
			for id, want := range tt.want {
				c, ok := h.Client("t", id)
				if !ok || c != clients[id] {
					t.Fatalf("hub does not know client %s", id)
				}
				if c.Role() != want {
					t.Errorf("%s: role %q, want %q", id, c.Role(), want)
				}
				err := c.Input([]byte("x"))
				if want == RoleOwner && err != nil || want == RoleReadOnly && !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s (%s) input: %v", id, want, err)
				}
			}
			if got := h.Clients(); got != len(tt.want) {
				t.Errorf("%d clients attached, want %d", got, len(tt.want))
			}
		})
	}
}

func TestLastDetachKeepsTerminalRunning(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	req := AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell(`echo first; while read l; do echo "again:$l"; done`)}
	c, _, r := attach(t, h, req)
	r.waitForText(t, "first\r\n")
	c.Close()
	r.checkClosed(t, "detached owner", nil)
	if h.Active() || h.Terminals() != 1 {
		t.Fatalf("after the last detach: active %v, %d terminals; want inactive with the terminal running", h.Active(), h.Terminals())
	}
	c, g, r := attach(t, h, req)
	if g.Created || g.Role != RoleOwner || !h.Active() {
		t.Fatalf("re-attach got %+v (active %v); want the running terminal, as owner", g, h.Active())
	}
	input(t, c, "x\n")
	out := r.waitForText(t, "again:x\r\n")
	if !strings.HasPrefix(out, "first\r\n") {
		t.Errorf("re-attached client did not get the scrollback first: %q", out)
	}
}

func TestAttachContextBoundsTheAttachment(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	ctx, cancel := context.WithCancelCause(context.Background())
	r := newRecorder()
	if _, _, err := h.Attach(ctx, AttachRequest{TermID: "t", ClientID: "c", Role: RoleOwner, Command: []string{"cat"}}, r); err != nil {
		t.Fatal(err)
	}
	gone := errors.New("connection gone")
	cancel(gone)
	r.checkClosed(t, "client of a cancelled context", gone)
	if h.Clients() != 0 || h.Terminals() != 1 {
		t.Errorf("%d clients, %d terminals; want the client gone and the terminal running", h.Clients(), h.Terminals())
	}
}

// failingSink refuses output, as a client whose connection broke would.
type failingSink struct{ *recorder }

var errSinkBroken = errors.New("sink broken")

func (failingSink) Data([]byte) error { return errSinkBroken }

func TestSinkErrorDetachesClient(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	owner, _, _ := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner, Command: []string{"cat"}})
	broken := failingSink{newRecorder()}
	c, _, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "broken"}, broken)
	if err != nil {
		t.Fatal(err)
	}
	input(t, owner, "x\n")
	broken.checkClosed(t, "client whose sink failed", errSinkBroken)
	if _, ok := h.Client("t", "broken"); ok {
		t.Error("client whose sink failed is still attached")
	}
	c.Close()
}

func TestAttachRefusesBadRequests(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	attach(t, h, AttachRequest{TermID: "taken", ClientID: "c", Command: []string{"cat"}})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		req   AttachRequest
		want  error // matched with errors.Is; nil means any error
		start bool  // the error is a *StartError
	}{
		{name: "no terminal id", req: AttachRequest{ClientID: "c"}},
		{name: "no client id", req: AttachRequest{TermID: "t"}},
		{name: "unknown role", req: AttachRequest{TermID: "t", ClientID: "c", Role: "admin"}},
		{name: "empty program", req: AttachRequest{TermID: "t", ClientID: "c", Command: []string{""}}},
		{name: "client id taken", req: AttachRequest{TermID: "taken", ClientID: "c"}, want: ErrClientExists},
		{name: "cancelled context", ctx: cancelled, req: AttachRequest{TermID: "t", ClientID: "c"}, want: context.Canceled},
		{name: "missing program", req: AttachRequest{TermID: "t", ClientID: "c", Command: []string{"./no-such-program"}}, start: true},
		{name: "missing directory", req: AttachRequest{TermID: "t", ClientID: "c", Command: []string{"cat"}, Cwd: "no-such-dir"}, start: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			c, _, err := h.Attach(ctx, tt.req, newRecorder())
			if err == nil {
				c.Close()
				t.Fatal("attach succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			var se *StartError
			if errors.As(err, &se) != tt.start {
				t.Errorf("got %v; StartError %v, want %v", err, !tt.start, tt.start)
			}
		})
	}
	if n := h.Terminals(); n != 1 {
		t.Errorf("%d terminals after refused attaches, want only the one taken", n)
	}
}

func TestClosedHubRefusesAttach(t *testing.T) {
	h := NewHub(HubOptions{})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "c"}, newRecorder()); !errors.Is(err, ErrHubClosed) {
		t.Fatalf("attach to closed hub: got %v, want ErrHubClosed", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}
