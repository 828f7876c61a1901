// Package hunks turns a proposed file edit into git-style hunks that a
// reviewer accepts or rejects one by one, and applies the chosen hunks
// exactly.
//
// [Diff] compares two [Snapshot]s of one file (either may be absent, for a
// created or deleted file) line by line and splits the changes into hunks
// with three lines of context, numbered h1, h2, … in file order. An [Edit]
// is plain data: it marshals to JSON for review tools, round-trips through
// JSON byte for byte for text, and renders as a unified diff that git apply
// accepts ([Edit.Patch], [Edit.PatchHunks]).
//
// [Edit.Apply] lands a subset of hunks on the file as it is now, and
// [Edit.Revert] takes a subset back out. Both work by context, like patch:
// when the file is still the version the edit was made against, hunks land
// at their recorded lines; when it has drifted, each hunk's context must
// occur exactly once in the part of the file not yet consumed, otherwise the
// call fails with a [*ConflictError] rather than guessing. Accepted bytes
// land byte for byte and rejected bytes never appear: line endings (LF,
// CRLF, mixed), a missing final newline, and invalid UTF-8 are all kept as
// they are.
//
// Binary files (see [IsBinary]) are never split: their edit has one hunk
// covering the whole file, applied only onto the exact old version.
package hunks
