// Package names holds the names every other package agrees on: the node
// aliases learners see (controlplane, node01, ...) and the lab workload
// images preloaded in the node image. It depends on nothing, so labs,
// grader, sandbox and server all use it.
package names

import "fmt"

// ControlPlane is the alias of every cluster's control-plane node.
const ControlPlane = "controlplane"

// Worker is the alias of the i-th worker (1-based): node01, node02, ...
func Worker(i int) string { return fmt.Sprintf("node%02d", i) }

// Nodes lists the aliases of a cluster with that many workers.
func Nodes(workers int) []string {
	out := []string{ControlPlane}
	for i := 1; i <= workers; i++ {
		out = append(out, Worker(i))
	}
	return out
}

// Lab workload images, preloaded in the node image's containerd.
const (
	NginxImage = "podpath.local/nginx:1.22"
	ToolsImage = "podpath.local/tools:bookworm"
)
