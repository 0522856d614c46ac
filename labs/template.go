package labs

import (
	"strconv"
	"strings"

	"github.com/podpath/podpath/internal/names"
)

// TemplateData is what step text may refer to: the learner's real cluster.
type TemplateData struct {
	// Cluster is the sandbox's name.
	Cluster string
	// Nodes maps each node alias to the node's name in Kubernetes.
	Nodes map[string]string
	// Images are the workload images preloaded on every node.
	Images Images
	// Values are the session's drawn values (Lab.Values).
	Values Values
	// TrafficPattern is the address of the session's traffic ports with
	// PORT in place of the port (docs/LABS.md "Web apps in the cluster").
	TrafficPattern string
	// TrafficPorts is the address of the page where the learner picks a
	// port to open.
	TrafficPorts string
}

// Traffic is the address that opens, in the browser, what listens on port
// of the learner's nodes (a NodePort, or anything on the control plane):
// {{ .Traffic 30080 }} in step text.
func (d TemplateData) Traffic(port int) string {
	return strings.ReplaceAll(d.TrafficPattern, "PORT", strconv.Itoa(port))
}

// Images names the preloaded workload images.
type Images struct {
	Nginx string
	Tools string
}

// SampleData is TemplateData for a lab's cluster shape, used to validate
// step text before any cluster exists.
func SampleData(l *Lab) TemplateData {
	d := TemplateData{Cluster: "sample", Nodes: map[string]string{names.ControlPlane: names.ControlPlane},
		Images: Images{Nginx: "nginx-image", Tools: "tools-image"}, Values: l.SampleValues(),
		TrafficPattern: "http://sample-PORT.localhost/", TrafficPorts: "/sessions/sample/traffic"}
	for i := 1; i <= l.Cluster.Workers; i++ {
		n := names.Worker(i)
		d.Nodes[n] = n
	}
	return d
}

// Render returns Markdown md with data filled in.
func Render(name, md string, data TemplateData) (string, error) {
	return expand(name, md, data)
}
