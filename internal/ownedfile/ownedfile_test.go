package ownedfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// nobody is a uid that is not the test's; chown to it needs root.
const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "this test gives files to another user")
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("secret"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	own := write("own", 0o600)
	readonly := write("readonly", 0o400)
	loose := write("loose", 0o644)
	writable := write("writable", 0o666)
	link := filepath.Join(dir, "link")
	os.Symlink(own, link)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)

	tests := []struct {
		name    string
		path    string
		private bool
		says    string // "" when it opens
	}{
		{"own private file", own, true, ""},
		{"read-only private file", readonly, true, ""},
		{"readable by others, private", loose, true, "others may read it"},
		{"readable by others, not private", loose, false, ""},
		{"writable by others", writable, false, "others may change it"},
		{"symbolic link", link, true, "symbolic link"},
		{"fifo (does not hang)", fifo, true, "not a regular file"},
		{"folder", sub, false, "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(tc.path, os.O_RDONLY, 0, tc.private)
			if tc.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want one saying %q", err, tc.says)
			}
		})
	}
	// Created when missing, by the running user.
	created := filepath.Join(dir, "new")
	f, err := Open(created, os.O_RDWR|os.O_CREATE, 0o600, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Through a link, O_CREATE does not create the target either.
	target := filepath.Join(dir, "target")
	os.Symlink(target, filepath.Join(dir, "dangling"))
	if _, err := Open(filepath.Join(dir, "dangling"), os.O_RDWR|os.O_CREATE, 0o600, false); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("dangling link: %v", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatal("the link's target was created")
	}
}

func TestReadPrivateBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	os.WriteFile(p, make([]byte, 100), 0o600)
	if _, err := ReadPrivate(p, 99); err == nil {
		t.Fatal("an oversized file was read")
	}
	if raw, err := ReadPrivate(p, 100); err != nil || len(raw) != 100 {
		t.Fatalf("%d bytes, %v", len(raw), err)
	}
}

func TestDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		os.Mkdir(p, mode)
		os.Chmod(p, mode)
		return p
	}
	private := mk("private", 0o700)
	readable := mk("readable", 0o755)
	open := mk("open", 0o777)
	sticky := mk("sticky", 0o1777)
	link := filepath.Join(base, "link")
	os.Symlink(private, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		path, says string
	}{
		{private, ""},
		{readable, ""},
		{link, ""},
		{open, "others may change it"},
		{sticky, "others may change it"},
		{file, "not a folder"},
	} {
		err := Dir(tc.path)
		if (err == nil) != (tc.says == "") || (err != nil && !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s: %v, want %q", filepath.Base(tc.path), err, tc.says)
		}
	}
	if err := EnsureDir(filepath.Join(base, "made", "here")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(base, "made", "here")); fi.Mode().Perm() != 0o700 {
		t.Fatalf("made with mode %v", fi.Mode())
	}
}

func TestAnotherUsersFilesAreRefused(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	dir := filepath.Join(base, "theirs")
	os.Mkdir(dir, 0o700)
	os.Chown(dir, nobody, nobody)
	file := filepath.Join(base, "their-file")
	os.WriteFile(file, []byte("x"), 0o600)
	os.Chown(file, nobody, nobody)
	mine := filepath.Join(base, "mine")
	os.Mkdir(mine, 0o700)
	link := filepath.Join(base, "their-link")
	os.Symlink(mine, link)
	os.Lchown(link, nobody, nobody)

	if err := Dir(dir); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("their folder: %v", err)
	}
	if _, err := ReadPrivate(file, 10); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("their file: %v", err)
	}
	if err := Dir(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("their link to my folder: %v", err)
	}
}
