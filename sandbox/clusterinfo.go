package sandbox

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

// signClusterInfo signs the kube-public/cluster-info ConfigMap for each
// bootstrap token as soon as kubeadm init is done (Create calls it when kind
// goes on to the CNI, so nothing polls while init needs the CPU), the work
// kube-controller-manager's bootstrap signer does, done earlier. A worker's
// kubeadm join finds the cluster through that signature and, when it is not
// there yet, retries after a fixed 5 s. On 2 cores the signer starts several
// seconds after the controller manager wins its lease, so kind's join, which
// follows init by two seconds, almost always paid those 5 s
// (docs/PERFORMANCE.md). The signature is the same HS256 JWS the signer
// computes (k8s.io/cluster-bootstrap/token/jws), with the same token, so the
// signer finds nothing to change. It returns once every token has signed the
// ConfigMap, or when ctx ends; failures only mean join waits as before.
func (m *Manager) signClusterInfo(ctx context.Context, name string) {
	var client kubernetes.Interface
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if client == nil {
			c, err := m.creatingClient(ctx, name, 2*time.Second)
			if err != nil {
				continue
			}
			client = c
		}
		if signed, err := signClusterInfoOnce(ctx, client); err == nil && signed {
			return
		}
	}
}

// signClusterInfoOnce adds every missing signature and reports whether the
// ConfigMap now carries one for each signing token.
func signClusterInfoOnce(ctx context.Context, c kubernetes.Interface) (bool, error) {
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	content, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok {
		return false, nil
	}
	secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		FieldSelector: "type=" + string(bootstrapapi.SecretTypeBootstrapToken),
	})
	if err != nil {
		return false, err
	}
	changed, tokens := false, 0
	for _, s := range secrets.Items {
		id, secret := string(s.Data[bootstrapapi.BootstrapTokenIDKey]), string(s.Data[bootstrapapi.BootstrapTokenSecretKey])
		if id == "" || secret == "" || string(s.Data[bootstrapapi.BootstrapTokenUsageSigningKey]) != "true" {
			continue
		}
		tokens++
		key := bootstrapapi.JWSSignatureKeyPrefix + id
		if old, ok := cm.Data[key]; ok && jws.DetachedTokenIsValid(old, content, id, secret) {
			continue
		}
		sig, err := jws.ComputeDetachedSignature(content, id, secret)
		if err != nil {
			return false, err
		}
		cm.Data[key] = sig
		changed = true
	}
	if tokens == 0 {
		return false, nil
	}
	if changed {
		if _, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return false, err
		}
	}
	return true, nil
}

// quickCoreDNSReadiness makes the CoreDNS Deployment kubeadm made probe its
// readiness every 2 s instead of 10. A CoreDNS Pod is not ready at its first
// probe (its kubernetes plugin has not synced yet), and the next one came
// 10 s later: the longest wait of a create once the images were unpacked
// (docs/PERFORMANCE.md). Create calls it as soon as kubeadm init is done, while
// the CoreDNS Pods still wait for a Ready node, so the rollout it starts
// replaces Pods that never ran. Failures only leave the probe as it was.
func (m *Manager) quickCoreDNSReadiness(ctx context.Context, name string) {
	c, err := m.creatingClient(ctx, name, 5*time.Second)
	if err != nil {
		return
	}
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"coredns","readinessProbe":{"periodSeconds":2}}]}}}}`)
	if _, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Patch(ctx, "coredns", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		m.log.Warn("could not shorten CoreDNS's readiness probe period", "sandbox", name, "err", err)
	}
}

// creatingKubeconfig is the admin kubeconfig of a sandbox kind is still
// creating (Kubeconfig caches, and would keep one read too early).
func (m *Manager) creatingKubeconfig(ctx context.Context, name string) (string, error) {
	nodes, err := m.nodes(ctx, name)
	if err != nil {
		return "", err
	}
	return adminKubeconfig(ctx, nodes[0])
}

// creatingClient is a client of a sandbox kind is still creating, whose
// requests give up after timeout.
func (m *Manager) creatingClient(ctx context.Context, name string, timeout time.Duration) (kubernetes.Interface, error) {
	kc, err := m.creatingKubeconfig(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		return nil, err
	}
	cfg.Timeout = timeout
	return kubernetes.NewForConfig(cfg)
}
