package codex

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// npmTargets maps GOOS/GOARCH onto the platform package and target triple
// under which the @openai/codex npm package ships its native binary.
var npmTargets = map[string]struct{ pkg, triple string }{
	"linux/amd64":  {"codex-linux-x64", "x86_64-unknown-linux-musl"},
	"linux/arm64":  {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
	"darwin/amd64": {"codex-darwin-x64", "x86_64-apple-darwin"},
	"darwin/arm64": {"codex-darwin-arm64", "aarch64-apple-darwin"},
}

// nativeBinary resolves the npm launcher (node_modules/.bin/codex, a
// Node script) to the platform binary it would exec, so a session does not
// pay for starting Node twice. It also returns the environment the
// launcher would add. ok is false when path is not the launcher or the
// binary is missing; the caller then runs path as it is.
func nativeBinary(path string) (bin string, env []string, ok bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || filepath.Base(real) != "codex.js" {
		return "", nil, false
	}
	pkgRoot := filepath.Dir(filepath.Dir(real)) // .../@openai/codex
	if filepath.Base(pkgRoot) != "codex" || filepath.Base(filepath.Dir(pkgRoot)) != "@openai" {
		return "", nil, false
	}
	target, known := npmTargets[runtime.GOOS+"/"+runtime.GOARCH]
	if !known {
		return "", nil, false
	}
	scope := filepath.Dir(pkgRoot)
	for _, candidate := range []string{
		filepath.Join(scope, target.pkg, "vendor", target.triple, "bin", "codex"),
		filepath.Join(pkgRoot, "vendor", target.triple, "bin", "codex"),
	} {
		fi, err := os.Stat(candidate)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return candidate, []string{"CODEX_MANAGED_BY_NPM=1", "CODEX_MANAGED_PACKAGE_ROOT=" + pkgRoot}, true
		}
	}
	return "", nil, false
}

// withEnv returns env with extra appended, dropping earlier values of the
// same names.
func withEnv(env []string, extra ...string) []string {
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for _, x := range extra {
			if strings.HasPrefix(x, name+"=") {
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
