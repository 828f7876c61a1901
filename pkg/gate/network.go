package gate

import (
	"fmt"
	"strings"
)

// netUse says how a command uses the network.
type netUse struct {
	reason string // what it does, for the reason shown
	writes string // how it also writes files locally, or ""
}

// network judges commands that reach the network. Without the policy's
// allowNetwork they are asked, with category network, whatever the
// allowlist says; with it they are judged like any other command (an
// allow pattern is still needed). It returns false when c does not reach
// the network, as far as the gate knows.
func (j *judge) network(c cmdLine, f *facts, t *tally) bool {
	use, ok := networkUse(c)
	if !ok {
		return false
	}
	f.readOnly = use.writes == ""
	if use.writes != "" {
		f.writes = use.writes
	}
	switch c.key() {
	case "curl":
		j.curl(c, f, t)
	case "wget":
		j.wget(c, f, t)
	case "ssh", "scp", "sftp":
		for _, w := range c.words[1:] {
			if w.known() && (strings.HasPrefix(w.value, "-o") || strings.HasPrefix(w.value, "-F")) {
				t.add(askV(CategoryShell, fmt.Sprintf("%s %s can configure local commands (ProxyCommand, LocalCommand)", c.name(), w.value)))
				break
			}
		}
	case "rsync":
		j.rsyncOptions(c, t)
	}
	// URLs and host:path operands are destinations, not local files.
	for i := 1; i < len(c.words); i++ {
		if w := c.words[i]; w.known() && (strings.Contains(w.value, "://") || isRemoteSpec(w.value)) {
			f.claim(i)
		}
	}
	if !j.g.policy.AllowNetwork {
		t.add(askV(CategoryNetwork, fmt.Sprintf("%s %s, and the policy does not allow network access", c.name(), use.reason)))
	}
	return true
}

// networkUse recognises commands that reach the network: always (curl,
// ssh...), or through certain subcommands (npm install, cargo fetch...),
// or when given a URL or host:path.
func networkUse(c cmdLine) (netUse, bool) {
	key := c.key()
	switch key {
	case "curl", "wget", "aria2c", "http", "https", "xh":
		return netUse{reason: "transfers data over the network"}, true
	case "ssh", "scp", "sftp", "mosh":
		return netUse{reason: "connects to another host"}, true
	case "nc", "ncat", "netcat", "telnet", "ftp", "tftp", "socat":
		return netUse{reason: "opens network connections"}, true
	case "ping", "ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "mtr", "whois":
		return netUse{reason: "queries the network"}, true
	case "gh", "glab", "hub":
		return netUse{reason: "talks to a code hosting service"}, true
	case "npx", "pnpx", "bunx", "uvx":
		return netUse{reason: "downloads and runs packages", writes: "installs packages"}, true
	case "apt", "apt-get", "aptitude", "yum", "dnf", "apk", "pacman", "zypper", "snap", "flatpak", "brew", "port":
		return netUse{reason: "installs or updates system packages from the network", writes: "installs packages"}, true
	case "gcloud", "aws", "az", "kubectl", "helm", "ngrok", "heroku", "flyctl", "vercel", "netlify":
		return netUse{reason: "talks to a cloud service"}, true
	case "rsync":
		for _, w := range c.words[1:] {
			if w.known() && !strings.HasPrefix(w.value, "-") && (strings.Contains(w.value, "://") || strings.Contains(w.value, "::") || isRemoteSpec(w.value)) {
				return netUse{reason: "copies to or from another host", writes: "rsync writes files"}, true
			}
		}
		return netUse{}, false
	}
	sub, rest := subcommand(c)
	var subs, installs string
	switch key {
	case "npm", "pnpm", "yarn", "bun":
		if key == "yarn" && sub == "" {
			return netUse{reason: "installs packages from a registry", writes: "installs packages"}, true
		}
		installs = "install i ci add update up upgrade create dlx exec x"
		subs = installs + " publish unpublish outdated audit login adduser logout view info show search deprecate dist-tag owner token whoami ping doctor"
		if sub == "init" && rest > 0 {
			return netUse{reason: "downloads a package initializer", writes: "creates a project"}, true
		}
	case "pip", "pip3", "pipx":
		installs = "install upgrade inject reinstall run"
		subs = installs + " download wheel search index"
	case "uv":
		installs = "add sync lock tool pip python run remove"
		subs = installs
	case "poetry", "pdm":
		installs = "install add update lock remove self"
		subs = installs + " publish search"
	case "conda", "mamba", "micromamba":
		installs = "install create update remove env"
		subs = installs + " search"
	case "gem":
		installs = "install update"
		subs = installs + " push fetch search sources"
	case "bundle", "bundler":
		installs = "install update add package"
		subs = installs + " outdated"
	case "composer":
		installs = "install require update create-project"
		subs = installs + " outdated search"
	case "cargo":
		installs = "install fetch add update vendor"
		subs = installs + " publish search login owner yank"
	case "docker", "podman", "nerdctl":
		installs = "pull"
		subs = installs + " push login search"
	case "deno":
		installs = "install add cache"
		subs = installs + " upgrade publish"
	default:
		return netUse{}, false
	}
	// Any operand may be the subcommand: global options that take a
	// value (npm --prefix DIR install) hide which word it is.
	for _, w := range c.words[1:] {
		if !w.known() || strings.HasPrefix(w.value, "-") || !containsField(subs, w.value) {
			continue
		}
		use := netUse{reason: w.value + " reaches a package registry or remote"}
		if containsField(installs, w.value) {
			use.writes = fmt.Sprintf("%s %s installs or fetches packages", c.name(), w.value)
		}
		return use, true
	}
	for _, w := range c.words[1:] {
		if w.known() && strings.Contains(w.value, "://") {
			return netUse{reason: "is given a URL"}, true
		}
	}
	return netUse{}, false
}

// subcommand returns the first operand that is not an option, and how
// many words follow it.
func subcommand(c cmdLine) (string, int) {
	for i := 1; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			return "", 0
		}
		if !strings.HasPrefix(w.value, "-") {
			return w.value, len(c.words) - i - 1
		}
	}
	return "", 0
}

func containsField(list, s string) bool {
	for _, f := range strings.Fields(list) {
		if f == s {
			return true
		}
	}
	return false
}

// isRemoteSpec recognises scp-style host:path (and user@host:path).
func isRemoteSpec(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return false
	}
	slash := strings.IndexByte(s, '/')
	return slash < 0 || colon < slash
}

// curl's options that name local files: outputs are edits, uploads and
// @file data are reads.
func (j *judge) curl(c cmdLine, f *facts, t *tally) {
	opts, _, ok := scanOpts(c.words, 1, optSpec{
		short: "AbcCdDeEFHKmorTuUwxXYyz",
		long: []string{"output", "upload-file", "data", "data-binary", "data-raw", "data-ascii",
			"data-urlencode", "form", "config", "header", "user", "cookie", "cookie-jar", "dump-header",
			"output-dir", "url", "request", "proxy", "referer", "user-agent", "max-time", "range",
			"write-out", "trace", "trace-ascii", "cert", "key", "cacert"},
	})
	if !ok {
		t.add(askV(CategoryShell, "curl is missing an option's value"))
		return
	}
	j.claimOptValues(f, opts)
	for _, o := range opts {
		switch o.name {
		case "-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--output-dir", "--trace", "--trace-ascii":
			f.writes = "curl " + o.name + " writes a file"
			w, node := c.valueWord(o)
			j.editArg(w, node, c.cwds, t)
		case "-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name":
			f.writes = "curl " + o.name + " writes a file"
			if j.g.mode != ModeReadonly {
				t.add(askV(CategoryEdit, "curl "+o.name+" writes a file named by the server or URL"))
			}
		case "-T", "--upload-file", "-K", "--config", "--cert", "--key", "--cacert":
			w, node := c.valueWord(o)
			j.readArg(w, node, c.cwds, t)
		case "-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "-F", "--form", "-b", "--cookie":
			w, node := c.valueWord(o)
			if !w.known() {
				t.add(askV(CategoryRead, fmt.Sprintf("curl %s %s is only known when it runs and may name a file", o.name, shown(node, j))))
				continue
			}
			if file, ok := curlDataFile(w.value); ok {
				t.concern(j.g.readPath(expandHomeValue(file, j.g.home), c.cwds))
			}
		}
	}
}

// curlDataFile finds a file curl reads for a data or form option:
// @file, name=@file, name=<file, or a cookie file (a value without '=').
func curlDataFile(v string) (string, bool) {
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		return rest, true
	}
	if _, value, ok := strings.Cut(v, "="); ok {
		if rest, ok := strings.CutPrefix(value, "@"); ok {
			return strings.SplitN(rest, ";", 2)[0], true
		}
		if rest, ok := strings.CutPrefix(value, "<"); ok {
			return strings.SplitN(rest, ";", 2)[0], true
		}
	}
	return "", false
}

// wget writes what it downloads into the current directory unless told
// otherwise.
func (j *judge) wget(c cmdLine, f *facts, t *tally) {
	opts, _, ok := scanOpts(c.words, 1, optSpec{
		short: "OPoaieUtTwQ",
		long: []string{"output-document", "directory-prefix", "output-file", "append-output", "input-file",
			"post-file", "body-file", "execute", "user-agent", "tries", "timeout", "wait", "quota", "header",
			"user", "password", "load-cookies", "save-cookies"},
	})
	if !ok {
		t.add(askV(CategoryShell, "wget is missing an option's value"))
		return
	}
	j.claimOptValues(f, opts)
	named := false
	for _, o := range opts {
		switch o.name {
		case "-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a", "--append-output", "--save-cookies":
			if o.name == "-O" || o.name == "--output-document" {
				named = true
				if o.value == "-" {
					continue
				}
			}
			f.writes = "wget writes files"
			w, node := c.valueWord(o)
			j.editArg(w, node, c.cwds, t)
		case "-i", "--input-file", "--post-file", "--body-file", "--load-cookies":
			w, node := c.valueWord(o)
			j.readArg(w, node, c.cwds, t)
		case "-e", "--execute":
			t.add(askV(CategoryShell, "wget -e runs wgetrc commands, which can change where it writes"))
		case "--spider":
			named = true
		}
	}
	if !named {
		f.writes = "wget writes the files it downloads"
		if j.g.mode != ModeReadonly {
			t.add(askV(CategoryEdit, "wget saves downloads under names chosen by the server or URL"))
		}
	}
}

func (j *judge) rsyncOptions(c cmdLine, t *tally) {
	for _, w := range c.words[1:] {
		if w.known() && (w.value == "-e" || strings.HasPrefix(w.value, "--rsh") || strings.HasPrefix(w.value, "--rsync-path")) {
			t.add(askV(CategoryShell, "rsync "+w.value+" runs a program"))
			return
		}
	}
}
