package kube

import (
	"bytes"
	"crypto/rand"
	"strings"
	"text/template"
)

// kubeadmConfig is the learner cluster's kubeadm configuration, written to
// /kind/kubeadm.conf in every node Pod, in the shape kind gives the Docker
// backend's clusters (the same kubelet and kube-proxy settings, so every lab
// sees one kind of node on either backend). The differences: the control
// plane is reached at its Pod's IP (a Pod has no published port), the
// certificate also names 127.0.0.1 and controlplane (the server reaches the
// API server through a port-forward; a learner types the alias), and the
// nested Pod and Service ranges keep clear of the host cluster's.
var kubeadmConfig = template.Must(template.New("kubeadm").Parse(`# written by podpath (sandbox/kube/kubeadm.go)
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
metadata:
  name: config
kubernetesVersion: {{.Version}}
clusterName: "{{.ClusterName}}"
controlPlaneEndpoint: "{{.ControlPlaneIP}}:6443"
apiServer:
  certSANs: [localhost, "127.0.0.1", controlplane, "{{.ControlPlaneIP}}"]
controllerManager:
  extraArgs:
    - name: "enable-hostpath-provisioner"
      value: "true"
networking:
  podSubnet: "{{.PodSubnet}}"
  serviceSubnet: "{{.ServiceSubnet}}"
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
metadata:
  name: config
bootstrapTokens:
- token: "{{.Token}}"
localAPIEndpoint:
  advertiseAddress: "{{.ControlPlaneIP}}"
  bindPort: 6443
nodeRegistration:
  name: "{{.NodeName}}"
  criSocket: "unix:///run/containerd/containerd.sock"
  kubeletExtraArgs:
    - name: "node-ip"
      value: "{{.NodeIP}}"
skipPhases:
  - "preflight"
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
metadata:
  name: config
nodeRegistration:
  name: "{{.NodeName}}"
  criSocket: "unix:///run/containerd/containerd.sock"
  kubeletExtraArgs:
    - name: "node-ip"
      value: "{{.NodeIP}}"
discovery:
  bootstrapToken:
    apiServerEndpoint: "{{.ControlPlaneIP}}:6443"
    token: "{{.Token}}"
    unsafeSkipCAVerification: true
skipPhases:
  - "preflight"
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
metadata:
  name: config
cgroupDriver: systemd
cgroupRoot: /kubelet
failSwapOn: false
imageGCHighThresholdPercent: 100
evictionHard:
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
metadata:
  name: config
mode: "iptables"
iptables:
  minSyncPeriod: 1s
conntrack:
  maxPerCore: 0
`))

type kubeadmValues struct {
	Version        string
	ClusterName    string
	ControlPlaneIP string
	NodeName       string
	NodeIP         string
	Token          string
	PodSubnet      string
	ServiceSubnet  string
}

func (v kubeadmValues) render() (string, error) {
	var b bytes.Buffer
	if err := kubeadmConfig.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// bootstrapToken makes a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}),
// one per learner cluster: its workers join with it. rand.Text is 26
// characters of base32 (A-Z, 2-7) from the system's random source.
func bootstrapToken() string {
	t := strings.ToLower(rand.Text())
	return t[:6] + "." + t[6:22]
}
