package command

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

func TestRequestIDTravelsBesideTheCommand(t *testing.T) {
	for _, req := range []Request{Send{Text: "hi"}, Stop{}, Answer{AskID: "a1", Decision: DecisionAllow}} {
		raw, err := MarshalWithID(req, "r-1")
		if err != nil {
			t.Fatal(err)
		}
		got, id, err := DecodeWithID(raw)
		if err != nil || id != "r-1" || got != req {
			t.Fatalf("%s: %s decoded as %#v, %q, %v", req.Cmd(), raw, got, id, err)
		}
		plain, err := Decode(raw)
		if err != nil || plain != req {
			t.Fatalf("Decode(%s) = %#v, %v", raw, plain, err)
		}
	}
	raw, _ := MarshalWithID(Stop{}, "")
	if string(raw) != `{"cmd":"stop"}` {
		t.Fatalf("no requestId: %s", raw)
	}
	if _, id, err := DecodeWithID(raw); err != nil || id != "" {
		t.Fatalf("no requestId decoded as %q, %v", id, err)
	}
}

func TestRequestIDIsChecked(t *testing.T) {
	for _, body := range []string{
		`{"cmd":"stop","requestId":"` + strings.Repeat("x", MaxRequestIDBytes+1) + `"}`,
		`{"cmd":"stop","requestId":"a\u0000b"}`,
		`{"cmd":"stop","requestId":7}`,
	} {
		if _, _, err := DecodeWithID([]byte(body)); !errors.Is(err, wire.ErrBadRequest) {
			t.Errorf("%.60s: %v, want bad_request", body, err)
		}
	}
}

func TestRequestIDRidesTheContext(t *testing.T) {
	ctx := context.Background()
	if RequestIDFrom(ctx) != "" || RequestIDFrom(WithRequestID(ctx, "")) != "" {
		t.Fatal("a requestId from nowhere")
	}
	if got := RequestIDFrom(WithRequestID(ctx, "r-9")); got != "r-9" {
		t.Fatalf("got %q", got)
	}
}
