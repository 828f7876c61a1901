// Package browsertest runs the web console's browser tests (web/e2e) in
// real headless Chromium against a real supervisor on the script engine:
// the Go test builds the binaries, then runs Node's test runner on the
// scripts, which start the supervisor and `supervisor console` themselves
// and drive Debian's Chromium with playwright-core.
//
// web/e2e/storage.smallfs.mjs runs apart (TestConsoleStorageFailedInChromium)
// with the supervisor's state folder on a small, real tmpfs that the test
// fills (internal/smallfs: a mount namespace of its own).
//
// Without Chromium, Node or the console's toolchain the test skips and says
// why; with CI=true it fails instead, so nothing is silently skipped in CI.
// Screenshots go to $CORRAL_SCREENSHOTS when set (docs/console.md says how
// to refresh the committed ones), else to a temporary folder.
package browsertest
