package watch

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestMainExplainsUsageMistakes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"help", []string{"--help"}, 0, "Keys:"},
		{"two sessions", []string{"3f2a", "9b8c"}, 2, "at most one session id"},
		{"negative from", []string{"3f2a", "--from", "-4"}, 2, "--from -4"},
		{"unknown flag", []string{"--colour"}, 2, "flag provided but not defined: -colour"},
		{"from not a number", []string{"--from", "ten"}, 2, "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), nil, tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}

func TestFlagsMayFollowTheSessionID(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// --from 0 is left to Run; a flag after the id must still be read,
	// and a negative one refused.
	if code := Main(context.Background(), nil, []string{"3f2a", "--from=-1"}, nil, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2: a flag after the id was not parsed (%s)", code, stderr.String())
	}
}

func TestFirstSeqShown(t *testing.T) {
	tests := []struct {
		o    Options
		want int64
	}{
		{Options{Session: "s1"}, 1},
		{Options{Session: "s1", From: 40}, 40},
		{Options{}, liveOnly},
		{Options{From: 3}, 3},
	}
	for _, tt := range tests {
		if got := (config{Options: tt.o}).firstSeq(); got != tt.want {
			t.Errorf("%+v: first seq %d, want %d", tt.o, got, tt.want)
		}
	}
}
