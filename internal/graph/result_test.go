package graph

import (
	"strings"
	"testing"
)

func TestExtractResult(t *testing.T) {
	for name, tc := range map[string]struct {
		text    string
		verdict string
		err     string
	}{
		"fenced at the end":   {"I checked it.\n\n```json\n{\"verdict\": \"accept\"}\n```\n", "accept", ""},
		"the last block wins": {"```json\n{\"verdict\": \"reject\"}\n```\nthen\n```json\n{\"verdict\": \"accept\"}\n```", "accept", ""},
		"untagged block":      {"```\n{\"verdict\": \"accept\"}\n```", "accept", ""},
		"bare object":         {"  {\"verdict\": \"accept\"}  ", "accept", ""},
		"other tags ignored":  {"```go\n{\"verdict\": \"x\"}\n```\n```json\n{\"verdict\": \"accept\"}\n```", "accept", ""},
		"indented fences":     {"  ```json\n  {\"verdict\": \"accept\"}\n  ```", "accept", ""},
		"unknown fields":      {"```json\n{\"verdict\": \"accept\", \"mood\": \"happy\"}\n```", "accept", ""},
		"no block":            {"All good, accept.", "", "no ```json block"},
		"broken json":         {"```json\n{\"verdict\": \n```", "", "no valid JSON object"},
		"an array":            {"```json\n[1,2]\n```", "", "no valid JSON object"},
		"unclosed fence":      {"```json\n{\"verdict\": \"accept\"}", "", "no ```json block"},
		"wrong types":         {"```json\n{\"verdict\": 3}\n```", "", "not a result object"},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := ExtractResult(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || CodeOf(err) != CodeBadResult {
					t.Fatalf("err %v, want bad_result %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %q, want %q", res.Verdict, tc.verdict)
			}
		})
	}
}

func FuzzExtractResult(f *testing.F) {
	f.Add("```json\n{\"verdict\": \"accept\"}\n```")
	f.Add("text\n```json\n{\"subgoals\": [{\"id\": \"U1\", \"title\": \"t\"}]}\n```\n")
	f.Add("{\"summary\": \"x\"}")
	f.Fuzz(func(t *testing.T, text string) {
		res, err := ExtractResult(text)
		if err == nil && res == nil {
			t.Fatal("no result and no error")
		}
		if err != nil && CodeOf(err) != CodeBadResult {
			t.Fatalf("error of code %s: %v", CodeOf(err), err)
		}
	})
}
