package httpapi

import (
	"net/http"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

// Bad parameters are refused before any probe runs.
func TestEnginesRefusesBadParameters(t *testing.T) {
	f := newScriptFixture(t, "")
	for _, q := range []string{
		"?refresh=maybe",
		"?check=everything",
		"?modelEndpoint=ftp://example.invalid",
		"?modelEndpoint=http://user:pass@127.0.0.1:1",
		"?modelEndpoint=%zz",
		"?model=x",
	} {
		code, raw := f.do("GET", "/v1/engines"+q, "")
		if e := errorOf(t, code, raw); code != http.StatusBadRequest || e.Code != wire.CodeBadRequest {
			t.Errorf("GET /v1/engines%s: %d %s", q, code, raw)
		}
	}
	code, raw := f.do("POST", "/v1/engines", "{}")
	if code != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/engines: %d %s", code, raw)
	}
}
