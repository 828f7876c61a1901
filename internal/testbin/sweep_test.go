package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

func TestSweepRemovesOnlyTheFoldersOfEndedProcesses(t *testing.T) {
	ended := exec.Command(testenv.NeedProgram(t, "true"))
	if err := ended.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	tmp := t.TempDir()
	folders := map[string]bool{ // name → kept
		fmt.Sprintf("%s%d-1", folderPrefix, ended.Process.Pid): false,
		fmt.Sprintf("%s%d-2", folderPrefix, os.Getpid()):       true,
		fmt.Sprintf("%s%d-3", folderPrefix, os.Getppid()):      true,
		"corral-testbin-123": true, // not named by a process
		"unrelated":          true,
	}
	for name := range folders {
		if err := os.Mkdir(filepath.Join(tmp, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweep(tmp)
	for name, kept := range folders {
		_, err := os.Stat(filepath.Join(tmp, name))
		if (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}
