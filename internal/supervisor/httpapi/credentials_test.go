package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// credentialFixture serves the API with store as its credentials, logging
// everything (debug level) where the test can read it.
func credentialFixture(t *testing.T, store CredentialStore) (*fixture, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	f := newScriptFixture(t, "", func(o *Options) {
		o.Credentials = store
		o.Logger = zap.New(core)
	})
	return f, logs
}

func decodeCredentials(t *testing.T, raw []byte) api.CredentialsReply {
	t.Helper()
	var r api.CredentialsReply
	if err := json.Unmarshal(raw, &r); err != nil || !r.OK {
		t.Fatalf("credentials reply %s: %v", raw, err)
	}
	return r
}

func TestCredentialsRoutes(t *testing.T) {
	keyring.MockInit()
	file := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileStore, err := creds.OpenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []*creds.Secrets{creds.NewKeyring(creds.OSKeyring{}), fileStore} {
		t.Run(string(store.Kind()), func(t *testing.T) {
			const secret = "sk-ant-api03-route-test-secret"
			f, logs := credentialFixture(t, store)

			code, raw := f.do("GET", "/v1/credentials", "")
			if code != http.StatusOK {
				t.Fatalf("list: %d %s", code, raw)
			}
			list := decodeCredentials(t, raw)
			if list.Store != api.CredentialStoreKind(store.Kind()) || len(list.Items) != len(creds.Items) {
				t.Fatalf("list = %+v", list)
			}
			for _, it := range list.Items {
				if it.Set {
					t.Fatalf("%s is set in a new store", it.Item)
				}
				if it.Item == creds.AnthropicAPIKey && !strings.Contains(strings.Join(it.Engines, ","), "claude") {
					t.Fatalf("%s: engines %v should name claude", it.Item, it.Engines)
				}
			}

			code, raw = f.do("PUT", "/v1/credentials/anthropic-api-key", `{"secret":"`+secret+`"}`)
			if code != http.StatusOK {
				t.Fatalf("set: %d %s", code, raw)
			}
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the reply to a set returns the secret: %s", raw)
			}
			set := decodeCredentials(t, raw)
			if len(set.Items) != 1 || set.Items[0].Item != creds.AnthropicAPIKey || !set.Items[0].Set {
				t.Fatalf("set reply = %+v", set)
			}
			if v, _ := store.Get(creds.AnthropicAPIKey); v != secret {
				t.Fatal("the secret did not reach the store")
			}
			_, raw = f.do("GET", "/v1/credentials", "")
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the list returns the secret: %s", raw)
			}

			for _, tc := range []struct {
				method, path, body string
				status             int
			}{
				{"PUT", "/v1/credentials/aws-key", `{"secret":"x"}`, http.StatusBadRequest},
				{"PUT", "/v1/credentials/openai-api-key", `{"secret":""}`, http.StatusBadRequest},
				{"PUT", "/v1/credentials/openai-api-key", `{"secret":"sk\n"}`, http.StatusBadRequest},
				{"PUT", "/v1/credentials/openai-api-key", `{"secret":"sk","extra":1}`, http.StatusBadRequest},
				{"PUT", "/v1/credentials/openai-api-key", `{"secret":42}`, http.StatusBadRequest},
				{"PUT", "/v1/credentials/openai-api-key", `not json`, http.StatusBadRequest},
				{"DELETE", "/v1/credentials/openai-api-key", ``, http.StatusNotFound},
				{"DELETE", "/v1/credentials/aws-key", ``, http.StatusBadRequest},
				{"POST", "/v1/credentials/openai-api-key", `{}`, http.StatusMethodNotAllowed},
				{"GET", "/v1/credentials/openai-api-key", ``, http.StatusMethodNotAllowed},
			} {
				code, raw := f.do(tc.method, tc.path, tc.body)
				if code != tc.status {
					t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, code, raw, tc.status)
					continue
				}
				errorOf(t, code, raw)
			}

			code, raw = f.do("DELETE", "/v1/credentials/anthropic-api-key", "")
			if code != http.StatusOK {
				t.Fatalf("delete: %d %s", code, raw)
			}
			if del := decodeCredentials(t, raw); len(del.Items) != 1 || del.Items[0].Set {
				t.Fatalf("delete reply = %+v", del)
			}
			if v, _ := store.Get(creds.AnthropicAPIKey); v != "" {
				t.Fatal("the item is still in the store")
			}

			// The log says what happened, never with the secret.
			if logs.FilterMessage("credential item set").FilterField(zap.String("item", creds.AnthropicAPIKey)).Len() != 1 {
				t.Errorf("no log line says the item was set")
			}
			for _, e := range logs.All() {
				line, _ := json.Marshal(e.ContextMap())
				if strings.Contains(e.Message+string(line), secret) {
					t.Fatalf("secret in log entry %q %s", e.Message, line)
				}
			}
		})
	}
}

// Without a store (a supervisor embedded in a test, say) the routes answer
// unavailable rather than pretending.
func TestCredentialsWithoutAStore(t *testing.T) {
	f := newScriptFixture(t, "")
	code, raw := f.do("GET", "/v1/credentials", "")
	if e := errorOf(t, code, raw); e.Code != wire.CodeUnavailable {
		t.Fatalf("list without a store: %d %s", code, raw)
	}
}
