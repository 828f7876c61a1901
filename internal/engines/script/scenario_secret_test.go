package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenarioErrorsQuoteNothingOfTheFile is finding 7 of issue 18: a
// session's scenario may name any file the runner can read, so an error
// about one says what is wrong and never what it holds.
func TestScenarioErrorsQuoteNothingOfTheFile(t *testing.T) {
	const secret = "sk-secret-123"
	for _, content := range []string{
		secret + ": x\n",
		"API_KEY: " + secret + "\n",
		"turns:\n  - steps:\n      - tool: " + secret + "\n        path: x\n",
		"turns:\n  - steps:\n      - say: hi\n        " + secret + ": 1\n",
		"{\"" + secret + "\": 1}",
		"- '" + secret + "'\n- [\n",
		"root:" + secret + ":0:0::/root:/bin/sh\n",
	} {
		path := filepath.Join(t.TempDir(), "file")
		os.WriteFile(path, []byte(content), 0o600)
		_, err := LoadScenario(path)
		if err == nil {
			t.Fatalf("%q parsed as a scenario", content)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "sk-") {
			t.Errorf("the error quotes the file: %v", err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("the error does not name the file: %v", err)
		}
	}
}
