package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
)

// TestEveryCommandCarriesARequestID: the client names each command's
// attempt, a new name for each call unless the caller gives one.
func TestEveryCommandCarriesARequestID(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, id, err := command.DecodeWithID(body)
		if err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		io.WriteString(w, `{"ok":true,"result":{"id":"m1","text":"hi"}}`)
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := c.Command(ctx, "0123456789ab", command.Send{Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Command(command.WithRequestID(ctx, "mine"), "0123456789ab", command.Stop{}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] == "" || ids[0] == ids[1] || ids[2] != "mine" {
		t.Fatalf("requestIds %q: want two new ones, then the caller's", ids)
	}
}
