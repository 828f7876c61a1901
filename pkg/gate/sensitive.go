package gate

import (
	"path"
	"path/filepath"
	"strings"
)

// sensitivity says why a path needs a human even where the policy
// otherwise allows access to it.
type sensitivity int

const (
	notSensitive sensitivity = iota
	// controlPath: state that changes what runs or what the gate
	// allows (.git internals, Corral's settings, git hook scripts).
	// Reading is fine; writing always needs approval.
	controlPath
	// credentialPath: a file that typically holds secrets. Reading and
	// writing always need approval.
	credentialPath
)

// classifyPath decides whether a path is sensitive. shown is the path as
// written (it may be relative), real its resolved form; both are
// checked, so neither a symlink named .env nor a symlink pointing at one
// hides it. Names compare case-insensitively, as on the file systems of
// macOS and Windows.
func (g *Gate) classifyPath(shown, real string) (sensitivity, string) {
	for _, name := range []string{filepath.Base(shown), filepath.Base(real)} {
		if why := credentialName(name); why != "" {
			return credentialPath, why
		}
	}
	for _, p := range []string{shown, real} {
		if procEnviron(p) {
			return credentialPath, "is a process's environment, which holds its secrets (API keys, tokens)"
		}
	}
	for _, home := range []string{g.homeReal, g.home} {
		if home == "" || !within(real, home) {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(real, home), string(filepath.Separator))
		if why := credentialHomeDir(filepath.ToSlash(rel)); why != "" {
			return credentialPath, why
		}
	}
	if rel, ok := g.relToWorktree(real); ok && rel != "." {
		if why := controlWorktreePath(rel); why != "" {
			return controlPath, why
		}
	}
	for _, part := range splitPath(shown) {
		if strings.EqualFold(part, ".git") {
			return controlPath, "is inside a .git directory, git's internal state"
		}
	}
	return notSensitive, ""
}

// procEnviron recognises /proc/PID/environ and /proc/PID/task/TID/environ
// (PID may be self or a glob).
func procEnviron(p string) bool {
	p = filepath.ToSlash(filepath.Clean(p))
	return strings.HasPrefix(p, "/proc/") && path.Base(p) == "environ"
}

// credentialName recognises file names that usually hold secrets.
func credentialName(name string) string {
	lower := strings.ToLower(name)
	switch lower {
	case ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass",
		".dockercfg", ".htpasswd", ".vault-token", "credentials.json":
		return "usually holds credentials"
	}
	if strings.HasPrefix(lower, ".env") {
		return "is an environment file (.env*), which usually holds secrets"
	}
	for _, key := range []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"} {
		if strings.HasPrefix(lower, key) {
			return "is an SSH key"
		}
	}
	for _, ext := range []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"} {
		if strings.HasSuffix(lower, ext) {
			return "looks like a private key or certificate store"
		}
	}
	return ""
}

// credentialHomeDir recognises directories under the home directory
// that hold credentials; rel is slash-separated and relative to home.
func credentialHomeDir(rel string) string {
	lower := strings.ToLower(rel)
	for _, dir := range []string{
		".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".password-store",
		".config/gcloud", ".config/gh", ".local/share/keyrings", ".terraform.d",
	} {
		if lower == dir || strings.HasPrefix(lower, dir+"/") {
			return "is in ~/" + dir + ", which holds credentials"
		}
	}
	return ""
}

// controlWorktreePath recognises worktree paths whose contents decide
// what runs later: git's state and hooks, and Corral's own settings
// (which hold this very policy). rel is slash-separated.
func controlWorktreePath(rel string) string {
	parts := strings.Split(rel, "/")
	for _, part := range parts {
		if strings.EqualFold(part, ".git") {
			return "is inside .git, git's internal state (config, hooks, refs)"
		}
	}
	switch strings.ToLower(parts[0]) {
	case ".corral":
		return "is Corral's settings directory, which holds this permission policy"
	case ".husky", ".githooks":
		return "holds git hook scripts, which run on the next git command"
	}
	return ""
}
