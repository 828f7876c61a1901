// Package supervisor keeps a supervisor's sessions: one runner child process
// per live session, started on demand and shared by every caller, reaped
// when idle, restarted after a crash, and stopped as a group on shutdown.
//
// A [Manager] owns the session folders under <state>/sessions/<id>/. It
// speaks the pkg/wire protocol to each runner over the runner's stdin and
// stdout, turns a runner's death into a runner_crashed error for every call
// pending on it, and fans the events the runner mirrors out to any number of
// [Stream] readers, which first replay events.jsonl and then follow live
// with no gap and no duplicate.
package supervisor
