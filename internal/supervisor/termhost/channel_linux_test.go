package termhost

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// handOver sends f over the runner's end of the channel as the master of
// termID, as the runner does.
func handOver(t *testing.T, theirs *os.File, termID string, f *os.File) {
	t.Helper()
	if err := unix.Sendmsg(int(theirs.Fd()), []byte(termID), unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		t.Fatalf("send %s: %v", termID, err)
	}
}

func TestReceiveMasterSkipsAStaleHandOverAndClosesIt(t *testing.T) {
	ours, theirs, err := NewMasterChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	defer theirs.Close()

	// Two pipes stand in for two masters: an export whose caller gave up
	// (term "old") and the one asked for (term "main").
	staleR, staleW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer staleW.Close()
	wantR, wantW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer wantW.Close()
	handOver(t, theirs, "old", staleR)
	handOver(t, theirs, "main", wantR)
	staleR.Close()
	wantR.Close()

	got, err := ReceiveMaster(ours, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if _, err := wantW.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := got.Read(b[:]); n != 1 || b[0] != 'x' {
		t.Fatalf("read %q, %v from the received master: not the one handed over for main", b[:n], err)
	}
	if flags, err := unix.FcntlInt(got.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("received master's descriptor flags %#x (%v): want close-on-exec", flags, err)
	}
	// The stale one was closed: its pipe has no reader left.
	if _, err := staleW.Write([]byte("x")); err == nil {
		t.Error("the stale hand-over's descriptor is still open")
	}
}

func TestReceiveMasterRefusesAHandOverWithoutADescriptor(t *testing.T) {
	ours, theirs, err := NewMasterChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	defer theirs.Close()
	if err := unix.Sendmsg(int(theirs.Fd()), []byte("main"), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if f, err := ReceiveMaster(ours, "main"); err == nil {
		f.Close()
		t.Fatal("took a hand-over that carried no descriptor")
	}
}
