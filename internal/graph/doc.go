// Package graph is the model of a graph run: one request turned into a graph
// of nodes (plan → setgoal → critique, then per subgoal implement → test →
// gate, then gate:goal → report), each run as an ordinary Corral session.
//
// The package is pure: it holds the run's document (Run, Node, Spec,
// Policy), the derivation of per-subgoal nodes from a spec, the rules that
// say which node may run (deps and after edges), claims and their tickets,
// the application of a node's structured result, retries and settling, and
// the compact views callers get (Verdict, Status). It does no I/O: the store
// (package graph/store) persists a Run and serialises changes to it, the
// executor (package graph/exec) runs nodes as sessions. docs/graph.md is the
// reference.
package graph
