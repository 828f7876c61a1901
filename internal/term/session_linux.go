package term

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// sessionMembers lists the live processes whose session id is sid.
// Signalling the leader's process group would miss the jobs a shell with
// job control moved into process groups of their own; they stay in the
// session. Zombies are left out: they are dead, waiting to be collected.
func sessionMembers(sid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited while we looked
		}
		if st, err := parseStat(raw); err == nil && st.session == sid && st.state != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// sessionAlive reports whether any process of session sid still runs.
func sessionAlive(sid int) bool {
	members, err := sessionMembers(sid)
	if err != nil {
		return unix.Kill(-sid, 0) == nil
	}
	return len(members) > 0
}

// procStat holds the fields of /proc/PID/stat the hub uses.
type procStat struct {
	state   byte // R, S, D, Z, ...
	pgrp    int
	session int
}

var errBadStat = errors.New("malformed process stat")

// parseStat parses the contents of a /proc/PID/stat file: "pid (comm) state
// ppid pgrp session ...". The command name may itself hold spaces and
// parentheses, so fields are counted from the last closing parenthesis.
func parseStat(raw []byte) (procStat, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return procStat{}, errBadStat
	}
	fields := bytes.Fields(raw[end+1:])
	// state, ppid, pgrp, session
	if len(fields) < 4 || len(fields[0]) != 1 {
		return procStat{}, errBadStat
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil || pgrp < 0 {
		return procStat{}, errBadStat
	}
	session, err := strconv.Atoi(string(fields[3]))
	if err != nil || session < 0 {
		return procStat{}, errBadStat
	}
	return procStat{state: fields[0][0], pgrp: pgrp, session: session}, nil
}
