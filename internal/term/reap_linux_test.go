package term

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessionIsHungUpBeforeTheProgramIsReaped: the program's pid is also its
// process group's and session's id. Once the program is reaped and its
// session is empty, the kernel may give that pid to a new process, which may
// lead a group or session of its own (as a runner does), and a hang-up sent
// to the old ids would hit it. So the hub hangs up what the program left in
// its session while the program is still an unreaped zombie holding its
// pid. A job in a process group of its own (job control on, so neither the
// group signal nor the kernel's hang-up of the foreground group reaches it,
// only the sweep of the session) looks at the program when the hang-up
// arrives.
func TestSessionIsHungUpBeforeTheProgramIsReaped(t *testing.T) {
	dir := t.TempDir()
	seen, ready := filepath.Join(dir, "seen"), filepath.Join(dir, "ready")
	script := `
		set -m
		leader=$$
		(
			trap 'if grep -q ") Z " /proc/$leader/stat 2>/dev/null; then echo unreaped; else echo reaped; fi > '"'` + seen + `'"'; exit 0' HUP
			: > '` + ready + `'
			while :; do sleep 0.01; done
		) &
		while [ ! -e '` + ready + `' ]; do sleep 0.01; done
		exit 5
	`
	h := newTestHub(t, HubOptions{KillGrace: 10 * time.Second})
	_, _, r := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner, Command: shell(script)})
	// Exit comes once the session is empty: the job has written what it saw.
	r.checkExit(t, "owner", 5, "")
	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the job left in the session never got its hang-up: %v", err)
	}
	if s := strings.TrimSpace(string(got)); s != "unreaped" {
		t.Errorf("when the job was hung up, the program was %s; want it unreaped, holding its pid", s)
	}
}
