//go:build !linux

package supervisor

// sweepStaleRunners has nothing to do without /proc to identify a runner
// safely; there, runners end when their stdin closes with the supervisor.
func (m *Manager) sweepStaleRunners() {}
