package console

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/corral-dev/corral/internal/testenv"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestHandlerServesTheBuild(t *testing.T) {
	assets := fstest.MapFS{
		"index.html":         {Data: []byte("<!doctype html><title>Corral</title>")},
		"assets/app-1a2b.js": {Data: []byte("console.log(1)")},
		"robots.txt":         {Data: []byte("User-agent: *")},
	}
	h := Handler(assets)
	cases := []struct {
		name, method, path string
		status             int
		body, cache        string
	}{
		{"index at the root", "GET", "/", 200, "<title>Corral</title>", "no-cache"},
		{"hashed assets are cached for good", "GET", "/assets/app-1a2b.js", 200, "console.log(1)", "public, max-age=31536000, immutable"},
		{"other files are revalidated", "GET", "/robots.txt", 200, "User-agent", "no-cache"},
		{"a page route gets the index", "GET", "/sessions/abc", 200, "<title>Corral</title>", "no-cache"},
		{"a missing asset is 404, not the index", "GET", "/assets/gone.js", 404, "", ""},
		{"HEAD works", "HEAD", "/", 200, "", "no-cache"},
		{"other methods are refused", "POST", "/", 405, "", ""},
		{"dot-dot stays inside", "GET", "/assets/../../console.go", 200, "<title>Corral</title>", "no-cache"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := get(t, h, c.method, c.path)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d", rec.Code, c.status)
			}
			if !strings.Contains(rec.Body.String(), c.body) {
				t.Errorf("body %q lacks %q", rec.Body.String(), c.body)
			}
			if got := rec.Header().Get("Cache-Control"); c.cache != "" && got != c.cache {
				t.Errorf("Cache-Control %q, want %q", got, c.cache)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
		})
	}
}

func TestHandlerWithoutABuildSaysHowToBuild(t *testing.T) {
	h := Handler(fstest.MapFS{".gitignore": {Data: []byte("*")}})
	for _, path := range []string{"/", "/assets/x.js"} {
		rec := get(t, h, "GET", path)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s: status %d, want 503", path, rec.Code)
		}
		if !strings.Contains(rec.Body.String(), "make build") {
			t.Errorf("%s: body does not say how to build: %s", path, rec.Body)
		}
	}
}

// budget is the most JavaScript the console may ship, compressed
// (issue #23): xterm.js, Markdown and the page included.
const budget = 300 << 10

// TestJavaScriptBudget checks the embedded build's scripts, gzipped.
func TestJavaScriptBudget(t *testing.T) {
	assets := Assets()
	if !Built(assets) {
		testenv.Missing(t, "the console's build", "this binary embeds no console (deploy/web.sh)")
	}
	total := 0
	err := fs.WalkDir(assets, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		raw, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(raw)
		zw.Close()
		t.Logf("%s: %d bytes, %d gzipped", path, len(raw), buf.Len())
		total += buf.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 {
		t.Fatal("the build holds no JavaScript")
	}
	t.Logf("JavaScript: %d bytes gzipped (budget %d)", total, budget)
	if total > budget {
		t.Errorf("the console's JavaScript is %d bytes gzipped, over the %d-byte budget", total, budget)
	}
}
