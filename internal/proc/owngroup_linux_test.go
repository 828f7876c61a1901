package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ownGroupEnv makes the test binary the helper of
// TestKillOwnGroupKillsTheRestOfTheGroup (TestMain).
const ownGroupEnv = "CORRAL_TEST_KILL_OWN_GROUP"

// killOwnGroupHelper leads a group, starts a long sleep in it, kills the
// rest of its group and says what became of the sleep.
func killOwnGroupHelper() int {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	n := KillOwnGroup()
	err := sleep.Wait()
	fmt.Printf("killed=%d sleep=%v\n", n, err)
	return 0
}

func TestMain(m *testing.M) {
	if os.Getenv(ownGroupEnv) != "" {
		os.Exit(killOwnGroupHelper())
	}
	os.Exit(m.Run())
}

// A process leading its group (a runner whose supervisor is gone) kills
// what its programs left in the group, and survives doing it.
func TestKillOwnGroupKillsTheRestOfTheGroup(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), ownGroupEnv+"=1")
	ConfigureDetached(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "killed=1 sleep=signal: killed" {
		t.Fatalf("helper said %q", got)
	}
}
