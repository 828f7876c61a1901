package term

import (
	"fmt"
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    procStat
		wantErr bool
	}{
		{"plain", "42 (sleep) S 1 42 40 0 -1 4194560", procStat{'S', 42, 40}, false},
		{"name with spaces and parentheses", "42 (a) b (c)) R 1 41 7 34816", procStat{'R', 41, 7}, false},
		{"zombie", "42 (sh) Z 1 42 42 0", procStat{'Z', 42, 42}, false},
		{"kernel thread", "2 (kthreadd) S 0 0 0 0 -1", procStat{'S', 0, 0}, false},
		{"truncated", "42 (sleep) S 1 42", procStat{}, true},
		{"no name", "42 S 1 42 40", procStat{}, true},
		{"long state", "42 (sleep) SS 1 42 40", procStat{}, true},
		{"session not a number", "42 (sleep) S 1 42 forty", procStat{}, true},
		{"group not a number", "42 (sleep) S 1 x 40", procStat{}, true},
		{"negative session", "42 (sleep) S 1 42 -3", procStat{}, true},
		{"empty", "", procStat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, error %v", tt.stat, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSessionMembersFindsThisProcess(t *testing.T) {
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStat(self)
	if err != nil {
		t.Fatal(err)
	}
	members, err := sessionMembers(st.session)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range members {
		if pid == os.Getpid() {
			if !sessionAlive(st.session) {
				t.Errorf("session %d has a member but is not alive", st.session)
			}
			return
		}
	}
	t.Errorf("session %d members %v lack this process %d", st.session, members, os.Getpid())
}

// FuzzParseStat builds stat lines around arbitrary command names, which
// processes choose themselves, and checks the fields are still found.
func FuzzParseStat(f *testing.F) {
	f.Add("sleep", uint32(40))
	f.Add("a) S 1 2 3 (b", uint32(7))
	f.Add(") ) )", uint32(0))
	f.Fuzz(func(t *testing.T, comm string, s uint32) {
		sid := int(s & 0x7fffffff) // pids fit in 31 bits everywhere
		stat := fmt.Sprintf("1234 (%s) S 1 1234 %d 34816 1234 4194560 0 0\n", comm, sid)
		got, err := parseStat([]byte(stat))
		if want := (procStat{'S', 1234, sid}); err != nil || got != want {
			t.Fatalf("parseStat(%q) = %+v, %v; want %+v", stat, got, err, want)
		}
		// Arbitrary bytes must fail cleanly or yield valid ids.
		if got, err := parseStat([]byte(comm)); err == nil && (got.session < 0 || got.pgrp < 0) {
			t.Fatalf("parseStat(%q) = %+v", comm, got)
		}
	})
}
