package hunks_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/corral-dev/corral/pkg/hunks"
)

// FuzzDiffApply checks the round trips of any pair of versions: applying
// every hunk gives the new version and none the old one, reverting every
// hunk from the new version gives the old one, reverting a subset from the
// new version equals applying its complement to the old one, a drifted
// file takes a hunk where it belongs or refuses it, and none of it changes
// across JSON. flags bit 0 makes the old version absent, bit 1 the new one;
// bit i of mask puts hunk i+1 (modulo 64) in the subset.
func FuzzDiffApply(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), byte(0), uint64(1))
	f.Add([]byte("a\r\nb"), []byte("a\nb\r\n"), byte(0), uint64(0))
	f.Add([]byte(""), []byte("x\n"), byte(1), uint64(1))
	f.Fuzz(func(t *testing.T, oldData, newData []byte, flags byte, mask uint64) {
		old, new := hunks.Present(oldData), hunks.Present(newData)
		if flags&1 != 0 {
			old = hunks.Snapshot{}
		}
		if flags&2 != 0 {
			new = hunks.Snapshot{}
		}
		e, err := hunks.Diff("f", old, new)
		if !old.Exists && !new.Exists {
			if err == nil {
				t.Fatal("Diff of two absent versions succeeded")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Validate(); err != nil {
			t.Fatal(err)
		}
		all := e.IDs()
		var subset, complement []string
		for i, id := range all {
			if mask&(1<<(i%64)) != 0 {
				subset = append(subset, id)
			} else {
				complement = append(complement, id)
			}
		}
		expect := func(what string, got hunks.Snapshot, err error, want hunks.Snapshot) {
			t.Helper()
			if err != nil || !sameSnapshot(got, want) {
				t.Fatalf("%s = %s, %v; want %s", what, show(got), err, show(want))
			}
		}
		got, err := e.Apply(old, all)
		expect("Apply(old, all)", got, err, new)
		got, err = e.Apply(old, nil)
		expect("Apply(old, none)", got, err, old)
		got, err = e.Revert(new, all)
		expect("Revert(new, all)", got, err, old)
		withSubset, err := e.Apply(old, subset)
		if err != nil {
			t.Fatalf("Apply(old, %v): %v", subset, err)
		}
		withComplement, err := e.Apply(old, complement)
		if err != nil {
			t.Fatalf("Apply(old, %v): %v", complement, err)
		}
		got, err = e.Revert(new, subset)
		expect("Revert(new, subset)", got, err, withComplement)
		got, err = e.Apply(withSubset, complement)
		if err == nil && !sameSnapshot(got, new) {
			t.Fatalf("Apply(Apply(old, %v), %v) misapplied: %s", subset, complement, show(got))
		}
		if err != nil && !errors.Is(err, hunks.ErrConflict) {
			t.Fatalf("Apply(Apply(old, %v), %v): %v", subset, complement, err)
		}
		if _, err := e.Patch(); err != nil {
			t.Fatalf("Patch: %v", err)
		}
		if e.Binary {
			return
		}
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var decoded hunks.Edit
		if err := json.Unmarshal(data, &decoded); err != nil {
			t.Fatal(err)
		}
		got, err = decoded.Apply(old, subset)
		expect("Apply(old, subset) after JSON", got, err, withSubset)
	})
}

// FuzzEditJSON feeds arbitrary JSON to the decoder and whatever decodes to
// Validate, Apply, Revert and Patch: an edit that fails Validate must be
// refused by the others too, and nothing may panic.
func FuzzEditJSON(f *testing.F) {
	for _, pair := range [][2]string{{"a\nb\nc\n", "a\nB\nc\n"}, {"", "x"}, {"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\nten"}} {
		e, err := hunks.Diff("f", hunks.Present([]byte(pair[0])), hunks.Present([]byte(pair[1])))
		if err != nil {
			f.Fatal(err)
		}
		data, err := json.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte(pair[0]))
	}
	f.Fuzz(func(t *testing.T, data, current []byte) {
		var e hunks.Edit
		if json.Unmarshal(data, &e) != nil {
			return
		}
		valid := e.Validate() == nil
		for _, op := range []func(hunks.Snapshot, []string) (hunks.Snapshot, error){e.Apply, e.Revert} {
			for _, cur := range []hunks.Snapshot{{}, hunks.Present(current)} {
				_, err := op(cur, e.IDs())
				if !valid && err == nil && len(e.Hunks) > 0 {
					t.Fatalf("an invalid edit applied: %s", data)
				}
			}
		}
		if _, err := e.Patch(); !valid && err == nil && len(e.Hunks) > 0 {
			t.Fatalf("an invalid edit rendered a patch: %s", data)
		}
	})
}
