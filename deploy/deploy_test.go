// Tests of the deploy artefacts (systemd unit, container recipe,
// Kubernetes manifests). None can run here (no systemd as init, no
// container engine, no cluster), so each is parsed and checked against the
// repository: the files and programs it names exist, the supervisor
// accepts the settings and flags it gives, and the hardening and volumes
// the docs promise are there.
package deploy_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/cli"
	"sigs.k8s.io/yaml"
)

// repo is the repository's root, this test's parent folder.
var repo = func() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}()

// serveAccepts runs `supervisor serve ARGS --check` in this process, with
// any --config path mapped from where the artefact installs it to the
// repository file, and fails unless the supervisor accepts them.
func serveAccepts(t *testing.T, args []string, configs map[string]string) {
	t.Helper()
	args = slices.Clone(args)
	for i, a := range args {
		if repoPath, ok := configs[a]; ok {
			// A copy: serve refuses a settings file others may write, as
			// a checkout's files may be (umask 002).
			raw, err := os.ReadFile(filepath.Join(repo, repoPath))
			if err != nil {
				t.Fatal(err)
			}
			args[i] = filepath.Join(t.TempDir(), filepath.Base(repoPath))
			if err := os.WriteFile(args[i], raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("%q does not run supervisor serve", args)
	}
	var out, errb bytes.Buffer
	if code := cli.Main(append(args, "--check"), &out, &errb); code != 0 {
		t.Errorf("supervisor %s --check: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
}

// unit is a systemd unit file: section → key → values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a KEY=VALUE line in a section: %q", path, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Fatalf("[%s] %s has %d values %q, want one", section, key, len(vs), vs)
	}
	return vs[0]
}

func TestSystemdUnitIsANotifyServiceHardenedUnderItsOwnUser(t *testing.T) {
	u := parseUnit(t, "deploy/systemd/corral-supervisor.service")
	want := map[string]string{
		"Type":                    "notify",
		"NotifyAccess":            "main",
		"User":                    "corral",
		"Group":                   "corral",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"StateDirectory":          "corral",
		"StateDirectoryMode":      "0700",
		"KillMode":                "process",
		"CapabilityBoundingSet":   "",
		"SystemCallArchitectures": "native",
	}
	for key, v := range want {
		if got := u.one(t, "Service", key); got != v {
			t.Errorf("%s=%q, want %q", key, got, v)
		}
	}
	rw := strings.Fields(u.one(t, "Service", "ReadWritePaths"))
	for _, p := range []string{"/var/lib/corral", "/srv/corral"} {
		if !slices.Contains(rw, p) {
			t.Errorf("ReadWritePaths %q lacks %s", rw, p)
		}
	}
	if _, ok := u["Service"]["MemoryDenyWriteExecute"]; ok {
		t.Error("MemoryDenyWriteExecute would stop Node.js, which runs the agent CLIs")
	}
	if u.one(t, "Service", "WatchdogSec") == "" || u.one(t, "Install", "WantedBy") != "multi-user.target" {
		t.Error("no watchdog or no install target")
	}

	// ExecStart, ExecStartPre and ExecReload run the supervisor with
	// settings it accepts; the settings file is the one shipped beside.
	configs := map[string]string{"/etc/corral/supervisor.conf": "deploy/systemd/supervisor.conf"}
	for _, key := range []string{"ExecStartPre", "ExecStart", "ExecReload"} {
		for _, line := range u["Service"][key] {
			args := strings.Fields(line)
			switch args[0] {
			case "/usr/local/bin/supervisor":
				serveAccepts(t, args[1:], configs)
			case "/bin/kill":
				if line != "/bin/kill -HUP $MAINPID" {
					t.Errorf("%s=%q", key, line)
				}
			default:
				t.Errorf("%s runs %s", key, args[0])
			}
		}
	}
	reload := u["Service"]["ExecReload"]
	if len(reload) != 2 || !strings.HasSuffix(reload[0], "--check") {
		t.Errorf("ExecReload %q: want a --check before the SIGHUP, so a broken file fails the reload", reload)
	}
	// The settings name the paths the unit gives the service.
	conf := settings(t, "deploy/systemd/supervisor.conf")
	if conf["state"] != "/var/lib/corral" || !strings.Contains(strings.Join(u["Service"]["Environment"], " "), "CORRAL_ENGINES_DIR="+conf["engines-dir"]) {
		t.Errorf("settings %v do not match the unit's state folder and engines", conf)
	}
	for _, f := range []string{"deploy/systemd/corral.sysusers", "deploy/systemd/corral.tmpfiles"} {
		raw, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil || !strings.Contains(string(raw), "corral") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// settings reads a supervisor settings file's NAME = VALUE lines.
func settings(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// instruction is one Containerfile instruction, continuation lines
// joined.
type instruction struct {
	cmd  string
	args string
	line int
}

func parseContainerfile(t *testing.T, path string) []instruction {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start := 0
	for n, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	return out
}

func TestContainerfileReferencesWhatTheRepositoryHas(t *testing.T) {
	ins := parseContainerfile(t, "deploy/container/Containerfile")
	stages := map[string]bool{}
	var final []instruction // the last stage's instructions
	args := map[string]string{}
	for _, in := range ins {
		f := strings.Fields(in.args)
		switch in.cmd {
		case "ARG":
			if k, v, ok := strings.Cut(in.args, "="); ok {
				args[k] = v
			}
		case "FROM":
			image := os.Expand(f[0], func(k string) string { return args[k] })
			if !strings.Contains(image, ":") || strings.HasSuffix(image, ":latest") {
				t.Errorf("line %d: base image %q is not pinned to a tag", in.line, image)
			}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stages[f[2]] = true
			}
			final = nil
		case "COPY":
			var from string
			var paths []string
			for _, a := range f {
				if v, ok := strings.CutPrefix(a, "--from="); ok {
					from = v
				} else if !strings.HasPrefix(a, "--") {
					paths = append(paths, a)
				}
			}
			if from != "" {
				if !stages[from] {
					t.Errorf("line %d: COPY --from=%s names no earlier stage", in.line, from)
				}
				continue
			}
			for _, src := range paths[:len(paths)-1] {
				if src == "." {
					continue
				}
				if _, err := os.Stat(filepath.Join(repo, src)); err != nil {
					t.Errorf("line %d: COPY %s: not in the repository: %v", in.line, src, err)
				}
			}
		case "RUN":
			for _, script := range regexp.MustCompile(`\./(deploy/[\w./-]+\.sh|install\.sh)`).FindAllStringSubmatch(in.args, -1) {
				p := script[1]
				if p == "install.sh" {
					p = "deploy/engines/install.sh"
				}
				if fi, err := os.Stat(filepath.Join(repo, p)); err != nil || fi.Mode().Perm()&0o111 == 0 {
					t.Errorf("line %d: runs %s, which is not an executable script of the repository: %v", in.line, p, err)
				}
			}
			for _, pkg := range regexp.MustCompile(`\./cmd/[\w-]+`).FindAllString(in.args, -1) {
				if _, err := os.Stat(filepath.Join(repo, pkg, "main.go")); err != nil {
					t.Errorf("line %d: builds %s, which is no command of the repository", in.line, pkg)
				}
			}
			if m := regexp.MustCompile(`-X ([\w./-]+)\.(\w+)=`).FindStringSubmatch(in.args); m != nil {
				dir := strings.TrimPrefix(m[1], "github.com/corral-dev/corral/")
				src, _ := os.ReadFile(filepath.Join(repo, dir, filepath.Base(dir)+".go"))
				if !regexp.MustCompile(`(?m)^var ` + m[2] + ` string`).Match(src) {
					t.Errorf("line %d: -X %s.%s names no string variable", in.line, m[1], m[2])
				}
			}
		}
		final = append(final, in)
	}
	for _, want := range []string{"web", "build", "engines"} {
		if !stages[want] {
			t.Errorf("no %s stage", want)
		}
	}
	// The go.mod's Go version is the build stage's.
	gomod, _ := os.ReadFile(filepath.Join(repo, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil || args["GO_VERSION"] != string(goVersion[1]) {
		t.Errorf("GO_VERSION %q, go.mod says %s", args["GO_VERSION"], goVersion)
	}
	// The final stage runs as its own user and starts the supervisor with
	// settings it accepts.
	var entry, cmd []string
	var user, health string
	for _, in := range final {
		switch in.cmd {
		case "ENTRYPOINT":
			entry = jsonArray(t, in)
		case "CMD":
			cmd = jsonArray(t, in)
		case "USER":
			user = in.args
		case "HEALTHCHECK":
			health = in.args
		}
	}
	if user == "" || user == "root" || user == "0" {
		t.Errorf("the image runs as %q", user)
	}
	if !slices.Equal(entry, []string{"tini", "--", "supervisor"}) {
		t.Errorf("ENTRYPOINT %q", entry)
	}
	serveAccepts(t, cmd, map[string]string{"/etc/corral/supervisor.conf": "deploy/container/supervisor.conf"})
	if !strings.HasSuffix(health, `CMD ["supervisor", "health"]`) {
		t.Errorf("HEALTHCHECK %q", health)
	}
}

func jsonArray(t *testing.T, in instruction) []string {
	t.Helper()
	var out []string
	if err := yaml.Unmarshal([]byte(in.args), &out); err != nil {
		t.Fatalf("line %d: %s is not in exec form: %v", in.line, in.cmd, err)
	}
	return out
}

// docs reads every YAML document of a manifest file.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// at walks a decoded YAML value by keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func named(list any, name string) any {
	l, _ := list.([]any)
	for _, x := range l {
		if at(x, "name") == name || at(x, "metadata", "name") == name {
			return x
		}
	}
	return nil
}

func TestKubernetesManifestsRunSupervisorsAsAStatefulSetWithStateAndWorktrees(t *testing.T) {
	k := docs(t, "deploy/kubernetes/kustomization.yaml")[0]
	byKind := map[string]map[string]any{}
	for _, r := range at(k, "resources").([]any) {
		for _, d := range docs(t, filepath.Join("deploy/kubernetes", r.(string))) {
			byKind[d["kind"].(string)+"/"+at(d, "metadata", "name").(string)] = d
		}
	}
	for _, f := range at(k, "configMapGenerator", 0, "files").([]any) {
		if _, err := os.Stat(filepath.Join(repo, "deploy/kubernetes", f.(string))); err != nil {
			t.Errorf("configMapGenerator file %s: %v", f, err)
		}
	}
	ss := byKind["StatefulSet/corral-supervisor"]
	if ss == nil {
		t.Fatalf("no StatefulSet corral-supervisor among %v", byKind)
	}
	if svc := at(ss, "spec", "serviceName").(string); byKind["Service/"+svc] == nil || at(byKind["Service/"+svc], "spec", "clusterIP") != "None" {
		t.Errorf("serviceName %s is no headless Service of the manifests", svc)
	}
	claims := at(ss, "spec", "volumeClaimTemplates")
	pod := at(ss, "spec", "template", "spec")
	c := named(at(pod, "containers"), "supervisor")
	mounts := map[string]string{}
	for _, m := range at(c, "volumeMounts").([]any) {
		mounts[at(m, "name").(string)] = at(m, "mountPath").(string)
	}
	for _, vol := range []string{"state", "worktrees"} {
		if named(claims, vol) == nil {
			t.Errorf("no volume claim template %s", vol)
		}
		if mounts[vol] == "" {
			t.Errorf("the supervisor does not mount %s", vol)
		}
	}
	if at(pod, "securityContext", "runAsNonRoot") != true {
		t.Error("the pod may run as root")
	}
	// The settings file comes from the ConfigMap, and names a state
	// folder inside the state volume and the image's runner and engines.
	cm := named(at(pod, "volumes"), "config")
	if at(cm, "configMap", "name") != at(k, "configMapGenerator", 0, "name") {
		t.Errorf("config volume %v is not the generated ConfigMap", cm)
	}
	args := []string{}
	for _, a := range at(c, "args").([]any) {
		args = append(args, a.(string))
	}
	serveAccepts(t, args, map[string]string{mounts["config"] + "/supervisor.conf": "deploy/kubernetes/supervisor.conf"})
	conf := settings(t, "deploy/kubernetes/supervisor.conf")
	if !strings.HasPrefix(conf["state"], mounts["state"]+"/") {
		t.Errorf("state %s is not inside the state volume %s", conf["state"], mounts["state"])
	}
	image := settings(t, "deploy/container/supervisor.conf")
	for _, key := range []string{"runner", "plugin-runner", "engines-dir"} {
		if conf[key] != image[key] {
			t.Errorf("%s = %s, the image has %s", key, conf[key], image[key])
		}
	}
	if env := named(at(c, "env"), "CORRAL_STATE"); at(env, "value") != conf["state"] {
		t.Errorf("CORRAL_STATE %v, settings say %s (supervisor health would look elsewhere)", env, conf["state"])
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
		cmd, _ := at(c, probe, "exec", "command").([]any)
		if len(cmd) != 2 || cmd[0] != "supervisor" || cmd[1] != "health" {
			t.Errorf("%s runs %v, want supervisor health", probe, cmd)
		}
	}
	// NATS comes from the official chart: values only, no copy of it.
	values := docs(t, "deploy/kubernetes/nats-values.yaml")[0]
	if at(values, "config", "jetstream", "enabled") != true || at(values, "config", "cluster", "replicas") != float64(3) {
		t.Errorf("nats values %v: want JetStream on a cluster of 3", values)
	}
	raw, _ := os.ReadFile(filepath.Join(repo, "deploy/kubernetes/nats-values.yaml"))
	if !strings.Contains(string(raw), "helm upgrade --install nats nats/nats --version") {
		t.Error("nats-values.yaml does not say how to install the chart it configures")
	}
	for kind := range byKind {
		if strings.Contains(strings.ToLower(kind), "nats") {
			t.Errorf("%s: NATS is copied into the manifests instead of installed from its chart", kind)
		}
	}
}
