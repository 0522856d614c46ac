package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// defaultStorageClass is the learner cluster's default StorageClass where
// the node image ships no manifest of its own: host-path volumes, which the
// controller manager provisions (enable-hostpath-provisioner, kubeadm.go).
const defaultStorageClass = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
`

// vxlanBackend sets flannel's backend to VXLAN. The node image's host-gw
// routes a learner's Pod range via its node Pods' addresses, so a packet
// between two of its nodes carries a nested Pod address the host's
// NetworkPolicy does not know (and drops); VXLAN wraps it in a packet
// between the two node Pods, which the policy lets through.
func vxlanBackend(conf string) (string, error) {
	var c map[string]any
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		return "", fmt.Errorf("net-conf.json: %w", err)
	}
	c["Backend"] = map[string]any{"Type": "vxlan"}
	b, err := json.MarshalIndent(c, "", "  ")
	return string(b) + "\n", err
}

// cniManifest readies the node image's CNI manifest
// (/kind/manifests/default-cni.yaml) as kind does for the Docker backend:
// the Pod range filled in, and the control plane's address given to the
// DaemonSet's first container as CONTROL_PLANE_ENDPOINT, so the CNI reaches
// the API server before kube-proxy makes the Service address work. Its
// flannel uses VXLAN (vxlanBackend says why).
func cniManifest(manifest, controlPlane string) (string, error) {
	if strings.Contains(manifest, "would you kindly template this file") {
		t, err := template.New("cni").Parse(manifest)
		if err != nil {
			return "", fmt.Errorf("the node image's CNI manifest: %w", err)
		}
		var out bytes.Buffer
		if err := t.Execute(&out, struct{ PodSubnet string }{DefaultPodSubnet}); err != nil {
			return "", fmt.Errorf("the node image's CNI manifest: %w", err)
		}
		manifest = out.String()
	}
	patchEnv := strings.Contains(manifest, "would you kindly patch this file")
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var docs []string
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("the node image's CNI manifest: %w", err)
		}
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		if conf, ok, _ := unstructured.NestedString(obj, "data", "net-conf.json"); ok && u.GetKind() == "ConfigMap" {
			vx, err := vxlanBackend(conf)
			if err != nil {
				return "", fmt.Errorf("the node image's CNI manifest: %w", err)
			}
			if err := unstructured.SetNestedField(obj, vx, "data", "net-conf.json"); err != nil {
				return "", err
			}
		}
		if u.GetKind() == "DaemonSet" && patchEnv {
			containers, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
			if len(containers) > 0 {
				c := containers[0].(map[string]any)
				env, _ := c["env"].([]any)
				c["env"] = append(env, map[string]any{"name": "CONTROL_PLANE_ENDPOINT", "value": controlPlane})
				if err := unstructured.SetNestedSlice(obj, containers, "spec", "template", "spec", "containers"); err != nil {
					return "", err
				}
			}
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return "", err
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n"), nil
}
