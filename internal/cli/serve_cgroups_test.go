package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/cgroup"
)

func TestServeCgroupFlags(t *testing.T) {
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	o, err := parseServe(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Cgroups != cgroup.Auto || o.cfg.RunnerLimits != (cgroup.Limits{}) {
		t.Errorf("defaults: cgroups %q, limits %+v; want auto and none", o.cfg.Cgroups, o.cfg.RunnerLimits)
	}
	// A settings file sets them by the same names.
	conf := writeConf(t, "cgroups = required\nrunner-memory-max = 512M\nrunner-pids-max = 256\n", 0o600)
	o, err = parseServe(e, []string{"--config", conf, "--runner-cpu-weight", "50"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (cgroup.Limits{MemoryMax: 512 << 20, PidsMax: 256, CPUWeight: 50}); o.cfg.Cgroups != cgroup.Required || o.cfg.RunnerLimits != want {
		t.Errorf("cgroups %q, limits %+v; want required and %+v", o.cfg.Cgroups, o.cfg.RunnerLimits, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cgroups", "sometimes"}, "want auto, off or required"},
		{[]string{"--runner-memory-max", "lots"}, "runner-memory-max"},
		{[]string{"--runner-cpu-weight", "20000"}, "cpu weight"},
		{[]string{"--runner-pids-max", "-1"}, "pids limit"},
		{[]string{"--cgroups", "off", "--runner-pids-max", "10"}, "need cgroups"},
	} {
		_, err := parseServe(e, tc.args)
		if err == nil || !strings.Contains(err.Error()+e.stderr.(*bytes.Buffer).String(), tc.want) {
			t.Errorf("serve %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
