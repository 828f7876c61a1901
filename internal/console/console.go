// Package console serves the web console: the front-end in web/, built by
// deploy/web.sh into dist/ and embedded in the supervisor's binary. The
// supervisor mounts it at / beside the API under /v1/.
//
// A binary built before the front-end (go build on a fresh clone) still
// compiles and runs: the console then answers every page with a short
// explanation of how to build it.
package console

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Assets returns the embedded build output, rooted at dist/.
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// fs.Sub fails only for an invalid name; "dist" is valid.
		panic(err)
	}
	return sub
}

// Built reports whether assets holds a console build.
func Built(assets fs.FS) bool {
	_, err := fs.Stat(assets, "index.html")
	return err == nil
}

// securityHeaders are sent with every console response. The page loads
// only its own scripts and talks only to its own origin; xterm.js sets
// inline styles, hence style-src 'unsafe-inline' (styles only).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; connect-src 'self'; font-src 'self' data:; object-src 'none'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
}

// notBuilt is the page served when the binary carries no console build.
const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Corral console: not built</title></head>
<body><main><h1>The console is not built into this binary</h1>
<p>This supervisor was compiled before its web front-end was built. Build it and the binaries with
<code>make build</code> (which runs <code>deploy/web.sh</code>: npm installs the pinned toolchain in
<code>web/</code> and writes the bundle the binary embeds), then start the supervisor again.</p>
<p>The API under <code>/v1/</code> works as usual.</p></main></body></html>
`

// Handler serves the console from assets: index.html at / (and for any
// other path that names no file, so the page's own routes survive a
// reload), the files of assets/ with a long cache life (their names carry
// a content hash), everything else as it is.
func Handler(assets fs.FS) http.Handler {
	built := Built(assets)
	var index []byte
	if built {
		index, _ = fs.ReadFile(assets, "index.html")
	}
	files := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !built {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(notBuilt))
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if fi, err := fs.Stat(assets, name); err == nil && !fi.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					w.Header().Set("Cache-Control", "no-cache")
				}
				files.ServeHTTP(w, r)
				return
			}
			if strings.HasPrefix(name, "assets/") {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
	})
}
