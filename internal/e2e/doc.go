// Package e2e holds end-to-end tests that run a real runner on each real
// engine CLI against the fake model server: the path a user's session takes,
// from a message through the gate and hunk review to the file on disk.
package e2e
